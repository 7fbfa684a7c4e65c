// The database domains of the sql env and their seeded row generators. Every domain has the same
// shape, so that one set of question templates (questions.ts) covers all of them:
//   people  (id, name, <group>, <year>)          e.g. customers(id, name, city, joined)
//   items   (id, <label>, <kind>, <measure>)     e.g. products(id, name, category, price)
//   links   (id, <person> → people.id, <item> → items.id, <amount>)   e.g. orders(…, quantity)
// Row counts and values come from the task's Rng alone (same seed ⇒ same rows). Some people get no
// link on purpose, so that "who never …" questions have answers.
import type { Rng } from '../../core/rng.ts';

export type DomainId = 'shop' | 'school' | 'library';
export const DOMAIN_IDS: readonly DomainId[] = ['shop', 'school', 'library'];

export type Value = string | number;

export interface Column {
  name: string;
  type: 'INTEGER' | 'TEXT';
  /** `table.column` this column refers to. */
  references?: string;
}

export interface TableDef {
  name: string;
  columns: Column[];
}

/** The wording and column roles of a domain (what the question templates speak of). */
export interface Domain {
  id: DomainId;
  people: {
    table: string;
    /** singular / plural nouns */
    one: string;
    many: string;
    group: string;
    groupNoun: string;
    year: string;
    yearNoun: string;
  };
  items: {
    table: string;
    one: string;
    many: string;
    label: string;
    kind: string;
    kindNoun: string;
    measure: string;
    measureNoun: string;
  };
  links: {
    table: string;
    person: string;
    item: string;
    amount: string;
    amountNoun: string;
    /** "ordered", "enrolled in", "borrowed" — people <verb> items. */
    verb: string;
  };
  groups: readonly string[];
  kinds: readonly string[];
  /** Words item labels are built from (two words: adjective + noun). */
  labelWords: readonly [readonly string[], readonly string[]];
  yearRange: [number, number];
  measureRange: [number, number];
  amountRange: [number, number];
}

const FIRST = [
  'Ada',
  'Ben',
  'Chloe',
  'Dev',
  'Elif',
  'Farid',
  'Grace',
  'Hugo',
  'Ines',
  'Jonas',
  'Kiri',
  'Lena',
  'Malik',
  'Nora',
  'Omar',
  'Priya',
  'Quinn',
  'Rosa',
  'Sami',
  'Tess',
];
const LAST = ['Abe', 'Berg', 'Costa', 'Diaz', 'Eze', 'Fox', 'Gray', 'Holm', 'Ito', 'Jain', 'Kahn', 'Lund'];

export const DOMAINS: Record<DomainId, Domain> = {
  shop: {
    id: 'shop',
    people: {
      table: 'customers',
      one: 'customer',
      many: 'customers',
      group: 'city',
      groupNoun: 'city',
      year: 'joined',
      yearNoun: 'year they joined',
    },
    items: {
      table: 'products',
      one: 'product',
      many: 'products',
      label: 'name',
      kind: 'category',
      kindNoun: 'category',
      measure: 'price',
      measureNoun: 'price',
    },
    links: {
      table: 'orders',
      person: 'customer_id',
      item: 'product_id',
      amount: 'quantity',
      amountNoun: 'quantity',
      verb: 'ordered',
    },
    groups: ['Lisbon', 'Oslo', 'Quito', 'Lagos', 'Hanoi', 'Perth'],
    kinds: ['books', 'garden', 'kitchen', 'toys', 'tools'],
    labelWords: [
      ['Red', 'Tiny', 'Smart', 'Solid', 'Quiet', 'Rapid', 'Soft'],
      ['Lamp', 'Kettle', 'Drill', 'Puzzle', 'Novel', 'Shovel', 'Clock'],
    ],
    yearRange: [2015, 2024],
    measureRange: [3, 250],
    amountRange: [1, 9],
  },
  school: {
    id: 'school',
    people: {
      table: 'students',
      one: 'student',
      many: 'students',
      group: 'house',
      groupNoun: 'house',
      year: 'enrolled',
      yearNoun: 'year they enrolled',
    },
    items: {
      table: 'courses',
      one: 'course',
      many: 'courses',
      label: 'title',
      kind: 'department',
      kindNoun: 'department',
      measure: 'credits',
      measureNoun: 'number of credits',
    },
    links: {
      table: 'enrolments',
      person: 'student_id',
      item: 'course_id',
      amount: 'grade',
      amountNoun: 'grade',
      verb: 'enrolled in',
    },
    groups: ['Amber', 'Birch', 'Cedar', 'Dune', 'Elm'],
    kinds: ['maths', 'physics', 'history', 'art', 'biology'],
    labelWords: [
      ['Intro', 'Applied', 'Modern', 'Advanced', 'Classical', 'Basic'],
      ['Algebra', 'Optics', 'Empires', 'Drawing', 'Genetics', 'Logic', 'Mechanics'],
    ],
    yearRange: [2018, 2024],
    measureRange: [1, 12],
    amountRange: [40, 100],
  },
  library: {
    id: 'library',
    people: {
      table: 'members',
      one: 'member',
      many: 'members',
      group: 'district',
      groupNoun: 'district',
      year: 'since',
      yearNoun: 'year they became members',
    },
    items: {
      table: 'books',
      one: 'book',
      many: 'books',
      label: 'title',
      kind: 'genre',
      kindNoun: 'genre',
      measure: 'pages',
      measureNoun: 'number of pages',
    },
    links: {
      table: 'loans',
      person: 'member_id',
      item: 'book_id',
      amount: 'days',
      amountNoun: 'loan length in days',
      verb: 'borrowed',
    },
    groups: ['North', 'South', 'Harbour', 'Old Town', 'Riverside'],
    kinds: ['mystery', 'poetry', 'science', 'travel', 'fantasy'],
    labelWords: [
      ['Silent', 'Lost', 'Golden', 'Winter', 'Hidden', 'Last', 'Northern'],
      ['Garden', 'River', 'Atlas', 'Letters', 'Voyage', 'Tower', 'Code'],
    ],
    yearRange: [2005, 2024],
    measureRange: [80, 900],
    amountRange: [1, 60],
  },
};

export function tableDefs(d: Domain): TableDef[] {
  const p = d.people;
  const i = d.items;
  const l = d.links;
  return [
    {
      name: p.table,
      columns: [
        { name: 'id', type: 'INTEGER' },
        { name: 'name', type: 'TEXT' },
        { name: p.group, type: 'TEXT' },
        { name: p.year, type: 'INTEGER' },
      ],
    },
    {
      name: i.table,
      columns: [
        { name: 'id', type: 'INTEGER' },
        { name: i.label, type: 'TEXT' },
        { name: i.kind, type: 'TEXT' },
        { name: i.measure, type: 'INTEGER' },
      ],
    },
    {
      name: l.table,
      columns: [
        { name: 'id', type: 'INTEGER' },
        { name: l.person, type: 'INTEGER', references: `${p.table}.id` },
        { name: l.item, type: 'INTEGER', references: `${i.table}.id` },
        { name: l.amount, type: 'INTEGER' },
      ],
    },
  ];
}

/** The rows of each table, in the column order of tableDefs (ids are 1…n). */
export type Rows = Record<string, Value[][]>;

const between = (rng: Rng, [lo, hi]: [number, number]) => lo + rng.int(hi - lo + 1);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];

export function generateRows(d: Domain, rng: Rng): Rows {
  const nPeople = 12 + rng.int(19); // 12–30
  const nItems = 8 + rng.int(13); // 8–20
  const nLinks = 20 + rng.int(41); // 20–60
  const people: Value[][] = [];
  for (let id = 1; id <= nPeople; id++) {
    people.push([
      id,
      `${pick(rng, FIRST)} ${pick(rng, LAST)}`,
      pick(rng, d.groups),
      between(rng, d.yearRange),
    ]);
  }
  const items: Value[][] = [];
  const labels = new Set<string>();
  for (let id = 1; id <= nItems; id++) {
    // Labels are unique, so that "the item called X" names one row.
    let label = '';
    do label = `${pick(rng, d.labelWords[0])} ${pick(rng, d.labelWords[1])}`;
    while (labels.has(label));
    labels.add(label);
    items.push([id, label, pick(rng, d.kinds), between(rng, d.measureRange)]);
  }
  // Only about three quarters of the people have links (the others answer "who never …").
  const active = people.filter(() => rng.float() < 0.75).map((r) => r[0] as number);
  if (active.length === 0) active.push(1);
  const links: Value[][] = [];
  for (let id = 1; id <= nLinks; id++) {
    links.push([id, pick(rng, active), 1 + rng.int(nItems), between(rng, d.amountRange)]);
  }
  return { [d.people.table]: people, [d.items.table]: items, [d.links.table]: links };
}
