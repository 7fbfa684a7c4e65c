// A search task's corpus: entities of five types (people, books, companies, cities, countries) drawn
// from the seed, linked by typed relations, each written up as one document of short sentences. Every
// relation of an entity is stated in exactly one sentence of that entity's own document (outgoing edges
// only), so a fact — "entity e has relation r to entity f" — is seen exactly when that sentence is shown
// (opened, or as a search snippet). That is what makes clue accounting exact (task.ts).
import type { Rng } from '../../core/rng.ts';

export type EntityType = 'person' | 'book' | 'company' | 'city' | 'country';

export type Relation =
  | 'author'
  | 'publisher'
  | 'birthplace'
  | 'employer'
  | 'founder'
  | 'headquarters'
  | 'country'
  | 'mayor'
  | 'capital';

/** The type a relation points to, per source type. */
export const RELATIONS: Record<EntityType, readonly [Relation, EntityType][]> = {
  book: [
    ['author', 'person'],
    ['publisher', 'company'],
  ],
  person: [
    ['birthplace', 'city'],
    ['employer', 'company'],
  ],
  company: [
    ['founder', 'person'],
    ['headquarters', 'city'],
  ],
  city: [
    ['country', 'country'],
    ['mayor', 'person'],
  ],
  country: [['capital', 'city']],
};

export interface Entity {
  /** The document id, e.g. d017 (ids are in generation order; the order says nothing about the type). */
  id: string;
  type: EntityType;
  name: string;
  /** Two describing attributes (the kind and a distinguishing phrase) for anchor descriptions. */
  kind: string;
  detail: string;
  year: number;
  /** Relation → target entity id. */
  links: Partial<Record<Relation, string>>;
}

export interface Doc {
  id: string;
  title: string;
  /** The document's sentences, in order; text = sentences joined by spaces. */
  sentences: string[];
  /** Relation → index of the sentence stating it. */
  factAt: Partial<Record<Relation, number>>;
}

export interface Corpus {
  entities: Entity[];
  byId: ReadonlyMap<string, Entity>;
  docs: Doc[];
  docById: ReadonlyMap<string, Doc>;
}

const FIRST = [
  'Mara',
  'Tobin',
  'Ilse',
  'Oren',
  'Priya',
  'Caspian',
  'Wren',
  'Dmitri',
  'Lena',
  'Hugo',
  'Nadia',
  'Felix',
  'Sana',
  'Matteo',
  'Ines',
  'Kofi',
  'Yara',
  'Bruno',
  'Elif',
  'Ansel',
  'Talia',
  'Rafe',
  'Noor',
  'Emil',
  'Greta',
  'Jonah',
  'Lucia',
  'Ravi',
  'Sigrid',
  'Theo',
];
const LAST = [
  'Quill',
  'Harrow',
  'Vance',
  'Okafor',
  'Lindqvist',
  'Marchetti',
  'Sato',
  'Brandt',
  'Delacroix',
  'Novak',
  'Achebe',
  'Castell',
  'Moreau',
  'Fairweather',
  'Kowalski',
  'Ibarra',
  'Holm',
  'Reyes',
  'Sorensen',
  'Takahashi',
  'Whitlock',
  'Zamora',
  'Petrov',
  'Ashdown',
  'Nakamura',
];
const PROFESSIONS = [
  'historian',
  'architect',
  'chemist',
  'painter',
  'economist',
  'surgeon',
  'poet',
  'engineer',
  'botanist',
  'journalist',
  'composer',
  'astronomer',
];
const TITLE_A = [
  'Silent',
  'Copper',
  'Hollow',
  'Northern',
  'Last',
  'Crimson',
  'Glass',
  'Winter',
  'Broken',
  'Hidden',
  'Salt',
  'Iron',
  'Distant',
  'Paper',
  'Amber',
];
const TITLE_B = [
  'River',
  'Orchard',
  'Lantern',
  'Harbor',
  'Archive',
  'Meadow',
  'Tower',
  'Compass',
  'Garden',
  'Bridge',
  'Mirror',
  'Voyage',
  'Kingdom',
  'Letter',
  'Signal',
];
const GENRES = ['novel', 'memoir', 'biography', 'play', 'poetry collection', 'essay collection'];
const TOPICS = [
  'a lighthouse keeper',
  'a failed expedition',
  'the salt trade',
  'a family vineyard',
  'a river flood',
  'a chess prodigy',
  'a lost manuscript',
  'a mountain railway',
  'a rebel printer',
  'a glassblower',
  'an island census',
  'a wartime codebreaker',
  'a travelling circus',
  'a silk merchant',
];
const CO_A = [
  'Halden',
  'Brightwater',
  'Kestrel',
  'Ostara',
  'Meridian',
  'Blackthorn',
  'Corvid',
  'Lumen',
  'Sable',
  'Tessellate',
  'Verdant',
  'Quarry',
];
const CO_B = ['Press', 'Industries', 'Logistics', 'Labs', 'Works', 'Holdings', 'Foods', 'Textiles'];
const INDUSTRIES = [
  'shipping',
  'publishing',
  'textile',
  'software',
  'brewing',
  'mining',
  'insurance',
  'aerospace',
  'pharmaceutical',
  'railway',
];
const CITY_A = ['North', 'East', 'West', 'South', 'Ash', 'Stone', 'Elder', 'Fair', 'Red', 'Gold', 'Mill'];
const CITY_B = ['bridge', 'mere', 'haven', 'ford', 'wick', 'field', 'port', 'stead', 'holm', 'gate'];
const FEATURES = [
  'salt marshes',
  'a cathedral',
  'a river port',
  'textile mills',
  'a university',
  'hot springs',
  'a fortress',
  'a canal network',
  'vineyards',
  'a glass museum',
  'a lighthouse',
];
const COUNTRIES = [
  'Valdoria',
  'Kesmark',
  'Oravia',
  'Lusantia',
  'Brenmoor',
  'Tarsis',
  'Elmaria',
  'Corvenia',
  'Istrel',
  'Mirravia',
];
const CLIMATES = ['temperate', 'arid', 'alpine', 'coastal', 'tropical', 'continental'];

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

/** How many entities of each type a corpus has. */
export const COUNTS: Record<EntityType, number> = { person: 28, book: 18, company: 12, city: 14, country: 6 };

/** Distinct names of one type, drawn by `make` until unique. */
function names(n: number, make: () => string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  while (out.length < n) {
    const s = make();
    if (!seen.has(s)) {
      seen.add(s);
      out.push(s);
    }
  }
  return out;
}

/** Draws the entities and their links. Ids are assigned in a shuffled order, so a type cannot be read
 * off an id. */
export function buildCorpus(rng: Rng): Corpus {
  const drafts: Omit<Entity, 'id'>[] = [];
  const add = (type: EntityType, list: string[], describe: () => [string, string, number]) => {
    for (const name of list) {
      const [kind, detail, year] = describe();
      drafts.push({ type, name, kind, detail, year, links: {} });
    }
  };
  add(
    'person',
    names(COUNTS.person, () => `${pick(rng, FIRST)} ${pick(rng, LAST)}`),
    () => [pick(rng, PROFESSIONS), '', 1900 + rng.int(100)],
  );
  add(
    'book',
    names(COUNTS.book, () => `The ${pick(rng, TITLE_A)} ${pick(rng, TITLE_B)}`),
    () => [pick(rng, GENRES), pick(rng, TOPICS), 1920 + rng.int(100)],
  );
  add(
    'company',
    names(COUNTS.company, () => `${pick(rng, CO_A)} ${pick(rng, CO_B)}`),
    () => [pick(rng, INDUSTRIES), '', 1850 + rng.int(170)],
  );
  add(
    'city',
    names(COUNTS.city, () => `${pick(rng, CITY_A)}${pick(rng, CITY_B)}`),
    () => ['city', pick(rng, FEATURES), 1100 + rng.int(800)],
  );
  add('country', rng.shuffle([...COUNTRIES]).slice(0, COUNTS.country), () => [
    'country',
    pick(rng, CLIMATES),
    1600 + rng.int(400),
  ]);
  const order = rng.shuffle(drafts.map((_, i) => i));
  const entities: Entity[] = order.map((i, k) => ({
    ...drafts[i],
    id: `d${String(k + 1).padStart(3, '0')}`,
  }));
  entities.sort((a, b) => (a.id < b.id ? -1 : 1));
  const ofType = (t: EntityType) => entities.filter((e) => e.type === t);
  const countries = ofType('country');
  const cities = ofType('city');
  // Every country's capital is one of its own cities: the first cities (in a shuffled order) are the
  // capitals, one per country; the others lie in a random country.
  rng.shuffle(cities).forEach((c, i) => {
    if (i < countries.length) {
      c.links.country = countries[i].id;
      countries[i].links.capital = c.id;
    } else c.links.country = pick(rng, countries).id;
  });
  for (const e of entities)
    for (const [rel, to] of RELATIONS[e.type]) {
      if (e.links[rel] !== undefined || rel === 'capital') continue;
      const pool = ofType(to).filter((x) => x.id !== e.id);
      e.links[rel] = pick(rng, pool).id;
    }
  const byId = new Map(entities.map((e) => [e.id, e]));
  const docs = entities.map((e) => writeDoc(e, byId));
  return { entities, byId, docs, docById: new Map(docs.map((d) => [d.id, d])) };
}

const an = (w: string) => (/^[aeiou]/i.test(w) ? `an ${w}` : `a ${w}`);

/** The anchor description of an entity: a phrase that names its kind and one or two attributes. */
export function describeEntity(e: Entity): string {
  switch (e.type) {
    case 'book':
      return `the ${e.year} ${e.kind} about ${e.detail}`;
    case 'person':
      return `the ${e.kind} born in ${e.year}`;
    case 'company':
      return `the ${e.kind} company founded in ${e.year}`;
    case 'city':
      return `the city known for ${e.detail} founded in ${e.year}`;
    case 'country':
      return `the ${e.detail} country that became independent in ${e.year}`;
  }
}

/** The words of a description a searcher would type (the description without its function words). */
export function descriptionQuery(e: Entity): string {
  const stop = new Set([
    'the',
    'a',
    'an',
    'about',
    'in',
    'for',
    'that',
    'known',
    'born',
    'founded',
    'became',
  ]);
  return describeEntity(e)
    .split(/\s+/)
    .filter((w) => !stop.has(w))
    .join(' ');
}

function writeDoc(e: Entity, byId: ReadonlyMap<string, Entity>): Doc {
  const n = (rel: Relation) => (byId.get(e.links[rel] as string) as Entity).name;
  const sentences: string[] = [];
  const factAt: Partial<Record<Relation, number>> = {};
  const fact = (rel: Relation, s: string) => {
    factAt[rel] = sentences.length;
    sentences.push(s);
  };
  switch (e.type) {
    case 'book':
      sentences.push(`${e.name} is ${an(e.kind)} about ${e.detail}, first published in ${e.year}.`);
      fact('author', `It was written by ${n('author')}.`);
      fact('publisher', `The first edition was brought out by ${n('publisher')}.`);
      sentences.push(`Critics praised its structure and its ending.`);
      break;
    case 'person':
      sentences.push(`${e.name} is ${an(e.kind)}, born in ${e.year}.`);
      fact('birthplace', `${e.name.split(' ')[0]} was born in the city of ${n('birthplace')}.`);
      fact('employer', `For most of a long career the ${e.kind} has worked for ${n('employer')}.`);
      break;
    case 'company':
      sentences.push(`${e.name} is ${an(e.kind)} company established in ${e.year}.`);
      fact('founder', `It was founded by ${n('founder')}.`);
      fact('headquarters', `Its headquarters are in ${n('headquarters')}.`);
      sentences.push(`The firm employs staff on three continents.`);
      break;
    case 'city':
      sentences.push(`${e.name} is a city known for ${e.detail}, founded in ${e.year}.`);
      fact('country', `${e.name} lies in ${n('country')}.`);
      fact('mayor', `The current mayor is ${n('mayor')}.`);
      break;
    case 'country':
      sentences.push(`${e.name} is a ${e.detail} country that became independent in ${e.year}.`);
      fact('capital', `Its capital is ${n('capital')}.`);
      break;
  }
  return { id: e.id, title: e.name, sentences, factAt };
}

export const docText = (d: Doc): string => d.sentences.join(' ');
