// The booking form: a hotel with five room types (how many they sleep, a price per night, nights sold
// out), dates within a three-week window, a number of guests, breakfast and the guest's name; a booking
// gets a reference. Goals name the room (level 1) or ask for the cheapest room that sleeps the guests
// and is free on every night (levels 2–3: a cheaper room that is too small or sold out on one of the
// nights is always there); level 3 also asks for the reference in the answer.
//
// Constraints the server checks (an error line, nothing booked): dates as YYYY-MM-DD inside the window,
// check-out after check-in, at most 7 nights, guests 1–6 and within the room's size, the room free on
// every night, a name.
//
// Sub-goals: check-in, check-out, guests, room, breakfast, name, the booking made (and the reference
// reported). Until a booking exists they count as the current page holds them — its URL's query (a
// results page carries the dates) and its form values. A booking that differs from the goal, or a
// second one, is irreversible.
//
// Flows (variants): dates first (search → rooms → details), room first (rooms → dates → details), or
// one page with everything.
import type { Rng } from '../../../core/rng.ts';
import type { ToolCall } from '../../../core/types.ts';
import {
  button,
  call,
  choiceField,
  clickKey,
  fillAll,
  flagField,
  href,
  link,
  message,
  money,
  norm,
  notFoundPage,
  type PageView,
  type Progress,
  pageValues,
  pick,
  Routes,
  shell,
  shuffled,
  table,
  textField,
  type WebApp,
  type WebRequest,
} from '../app.ts';
import { h, type Page, type VNode } from '../dom.ts';
import type { Skin } from '../skin.ts';
import { PEOPLE } from './shop.ts';

const ROOM_TYPES = [
  { id: 'double', name: 'Standard Double', sleeps: 2 },
  { id: 'twin', name: 'Twin Room', sleeps: 2 },
  { id: 'king', name: 'Deluxe King', sleeps: 2 },
  { id: 'family', name: 'Family Room', sleeps: 4 },
  { id: 'junior', name: 'Junior Suite', sleeps: 3 },
  { id: 'studio', name: 'Garden Studio', sleeps: 3 },
  { id: 'loft', name: 'Loft Apartment', sleeps: 5 },
] as const;
const HOTELS = ['Hotel Marisol', 'The Linden', 'Harbor Inn', 'Casa Alta'] as const;
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const WINDOW = 21;
const BREAKFAST = 1500;

export interface Room {
  id: string;
  name: string;
  sleeps: number;
  /** Cents per night. */
  price: number;
  /** Nights (YYYY-MM-DD of the night's date) it is sold out. */
  soldOut: string[];
}

interface Booking {
  ref: string;
  room: string;
  checkin: string;
  checkout: string;
  guests: number;
  breakfast: boolean;
  name: string;
  total: number;
}

interface BookingState {
  bookings: Booking[];
  nextRef: number;
}

/** The booking the goal asks for, and whether it asks for the reference in the answer. */
export type BookingGoal = Omit<Booking, 'ref' | 'total'> & { report: boolean };

const iso = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (day: string, n: number) => iso(new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000));
/** A date as the goal writes it ("14 July 2025") or as a date list shows it ("Mon 14 Jul"). */
const dateText = (day: string, form: 'long' | 'short') => {
  const d = new Date(`${day}T00:00:00Z`);
  const month = MONTHS[d.getUTCMonth()];
  return form === 'long'
    ? `${d.getUTCDate()} ${month} ${d.getUTCFullYear()}`
    : `${DAYS[d.getUTCDay()]} ${d.getUTCDate()} ${month.slice(0, 3)}`;
};
const longDate = (day: string) => dateText(day, 'long');
const shortDate = (day: string) => dateText(day, 'short');
/** The nights of a stay: the dates from check-in up to the day before check-out. */
const nightsOf = (checkin: string, checkout: string) => {
  const out: string[] = [];
  for (let d = checkin; d < checkout && out.length <= 31; d = addDays(d, 1)) out.push(d);
  return out;
};

/** Builds the hotel and a goal; the goal's room is the one the goal's words pick out. */
function hotelAndGoal(rng: Rng, level: 1 | 2 | 3): { rooms: Room[]; start: string; goal: BookingGoal } {
  const start = addDays('2025-06-02', 7 * rng.int(16));
  const window = Array.from({ length: WINDOW }, (_, i) => addDays(start, i));
  const types = shuffled(rng, ROOM_TYPES);
  const prices = new Set<number>();
  const rooms: Room[] = types.slice(0, 5).map((t) => {
    let p = (60 + 5 * rng.int(37)) * 100;
    while (prices.has(p)) p += 500;
    prices.add(p);
    const soldOut = [...new Set(Array.from({ length: rng.int(4) }, () => pick(rng, window)))].sort();
    return { id: t.id, name: t.name, sleeps: t.sleeps, price: p, soldOut };
  });
  const nights = 2 + rng.int(level === 1 ? 2 : 4);
  const checkin = window[rng.int(WINDOW - nights)];
  const checkout = addDays(checkin, nights);
  const stay = nightsOf(checkin, checkout);
  const free = (r: Room) => !r.soldOut.some((d) => stay.includes(d));
  // Guests that at least one room (two from level 2, so that "the cheapest" is a choice) can sleep.
  const sizes = rooms.map((r) => r.sleeps).sort((a, b) => b - a);
  const guests = 1 + rng.int(Math.min(4, sizes[level === 1 ? 0 : 1]));
  const fits = rooms.filter((r) => r.sleeps >= guests);
  let room: Room;
  if (level === 1) {
    room = pick(rng, fits);
    room.soldOut = room.soldOut.filter((d) => !stay.includes(d));
  } else {
    // The cheapest room that fits and is free; a cheaper fitting room is sold out on one of the nights.
    const byPrice = [...fits].sort((a, b) => a.price - b.price);
    for (const r of byPrice) r.soldOut = r.soldOut.filter((d) => !stay.includes(d));
    if (byPrice.length >= 2) {
      const blocked = byPrice[0];
      blocked.soldOut = [...new Set([...blocked.soldOut, pick(rng, stay)])].sort();
    }
    room = byPrice.find(free) as Room;
  }
  return {
    rooms,
    start,
    goal: {
      room: room.id,
      checkin,
      checkout,
      guests,
      breakfast: rng.int(2) === 1,
      name: pick(rng, PEOPLE),
      report: level === 3,
    },
  };
}

/** The booking app for a task. */
export function buildBooking(rng: Rng, level: 1 | 2 | 3, skin: Skin): WebApp {
  const { rooms, start, goal } = hotelAndGoal(rng, level);
  const hotel = pick(rng, HOTELS);
  const firstRef = 100 + rng.int(900);
  const byId = new Map(rooms.map((r) => [r.id, r]));
  const window = Array.from({ length: WINDOW + 1 }, (_, i) => addDays(start, i));
  const target = byId.get(goal.room) as Room;

  const L = (key: string, synonyms: readonly string[]) => skin.label(`booking.${key}`, synonyms);
  const words = {
    home: L('home', ['Home', 'Start over', 'Hotel home']),
    checkin: L('checkin', ['Check-in', 'Arrival', 'From']),
    checkout: L('checkout', ['Check-out', 'Departure', 'Until']),
    guests: L('guests', ['Guests', 'Number of guests', 'People']),
    room: L('room', ['Room', 'Room type', 'Accommodation']),
    search: L('search', ['Check availability', 'Search', 'Find rooms']),
    select: L('select', ['Select', 'Choose', 'Book this room']),
    next: L('next', ['Continue', 'Next', 'Go on']),
    name: L('name', ['Guest name', 'Name', 'Booking name']),
    breakfast: L('breakfast', ['Breakfast', 'Add breakfast', 'Breakfast included']),
    confirm: L('confirm', ['Confirm booking', 'Book now', 'Complete booking']),
    sleeps: L('sleeps', ['Sleeps', 'Max guests', 'Capacity']),
    night: L('night', ['Per night', 'Nightly rate', 'Price per night']),
  };
  const flow = skin.flow('booking.flow', 3);
  const dateKind = skin.kind('booking.date', ['text', 'select'] as const);
  const guestKind = skin.kind('booking.guests', ['select', 'text', 'radio'] as const);
  const dateLabel = (w: string) => (dateKind === 'text' ? `${w} (YYYY-MM-DD)` : w);
  const dateField = (name: 'checkin' | 'checkout', value: string) =>
    choiceField(
      dateKind,
      name,
      dateLabel(words[name]),
      [{ value: '', label: '—' }, ...window.map((d) => ({ value: d, label: shortDate(d) }))],
      value,
    );
  const guestField = (value: string) =>
    choiceField(
      guestKind,
      'guests',
      words.guests,
      [1, 2, 3, 4, 5, 6].map((n) => ({ value: String(n), label: String(n) })),
      value,
    );
  const roomOptions = rooms.map((r) => ({ value: r.id, label: r.name }));

  const page = (title: string, kind: string, main: VNode[]): Page =>
    shell(skin, 'booking', `${title} — ${hotel}`, kind, [link('nav:home', '/', words.home)], main);

  /** What is wrong with a stay request, or undefined. */
  const problem = (q: URLSearchParams, withRoom: boolean): string | undefined => {
    const checkin = q.get('checkin') ?? '';
    const checkout = q.get('checkout') ?? '';
    const guests = Number(q.get('guests'));
    if (!window.includes(checkin) || !window.includes(checkout))
      return `Dates must be YYYY-MM-DD between ${start} and ${window[WINDOW]}.`;
    if (checkout <= checkin) return 'Check-out must be after check-in.';
    if (nightsOf(checkin, checkout).length > 7) return 'At most 7 nights.';
    if (!Number.isInteger(guests) || guests < 1 || guests > 6) return 'Guests must be a number from 1 to 6.';
    if (!withRoom) return undefined;
    const r = byId.get(q.get('room') ?? '');
    if (r === undefined) return 'Choose a room.';
    if (guests > r.sleeps) return `The ${r.name} sleeps at most ${r.sleeps}.`;
    if (r.soldOut.some((d) => nightsOf(checkin, checkout).includes(d)))
      return `The ${r.name} is not available on these dates.`;
    return undefined;
  };
  const status = (r: Room, q: URLSearchParams): string | undefined => {
    if (Number(q.get('guests')) > r.sleeps) return 'Too small';
    const stay = nightsOf(q.get('checkin') ?? '', q.get('checkout') ?? '');
    return r.soldOut.some((d) => stay.includes(d)) ? 'Sold out' : undefined;
  };
  const total = (r: Room, q: URLSearchParams, breakfast: boolean) => {
    const n = nightsOf(q.get('checkin') ?? '', q.get('checkout') ?? '').length;
    return n * r.price + (breakfast ? n * Number(q.get('guests')) * BREAKFAST : 0);
  };
  const roomTable = (action: (r: Room) => VNode) =>
    table(
      [
        words.room,
        words.sleeps,
        words.night,
        L('sold-out', ['Sold out on', 'Unavailable nights', 'Full on']),
        '',
      ],
      rooms.map((r) => [
        r.name,
        String(r.sleeps),
        money(r.price),
        r.soldOut.length === 0 ? '—' : r.soldOut.map(shortDate).join(', '),
        action(r),
      ]),
    );
  const errorOf = (req: WebRequest) => {
    const e = req.query.get('error');
    return e === null ? [] : [message('alert', e)];
  };
  const stayFields = (q: URLSearchParams) =>
    skin.order('booking.stay', [
      dateField('checkin', q.get('checkin') ?? ''),
      dateField('checkout', q.get('checkout') ?? ''),
      guestField(q.get('guests') ?? '2'),
    ]);
  const detailFields = (q: URLSearchParams) =>
    skin.order('booking.details', [
      textField('name', words.name, q.get('name') ?? ''),
      flagField(
        skin.kind('booking.breakfast', ['checkbox', 'select', 'radio'] as const),
        'breakfast',
        `${words.breakfast} (${money(BREAKFAST)} per guest per night)`,
        false,
      ),
    ]);
  const hidden = (q: URLSearchParams, names: readonly string[]) =>
    names.map((n) => h('input', { type: 'hidden', name: n, value: q.get(n) ?? '' }));

  const home = (req: WebRequest): Page => {
    const title = L('title', [`Book a room at ${hotel}`, hotel, `${hotel}: reservations`]);
    if (flow === 0)
      return page(title, 'search', [
        h('h1', {}, title),
        ...errorOf(req),
        h(
          'form',
          { method: 'get', action: '/rooms' },
          ...stayFields(req.query),
          button('search', words.search),
        ),
      ]);
    if (flow === 1)
      return page(title, 'rooms-list', [
        h('h1', {}, title),
        roomTable((r) => link(`choose:${r.id}`, href('/dates', { room: r.id }), words.select)),
      ]);
    const fields = skin.order('booking.onepage', [
      [
        choiceField(
          skin.kind('booking.room', ['select', 'radio'] as const),
          'room',
          words.room,
          roomOptions,
          req.query.get('room') ?? rooms[0].id,
        ),
      ],
      stayFields(req.query),
      detailFields(req.query),
    ]);
    return page(title, 'onepage', [
      h('h1', {}, title),
      ...errorOf(req),
      roomTable(() => ''),
      h('form', { method: 'post', action: '/book' }, ...fields.flat(), button('confirm', words.confirm)),
    ]);
  };

  const routes = new Routes<BookingState>(
    [
      { method: 'GET', path: '/', handle: (_s, req) => ({ status: 200, page: home(req) }) },
      {
        method: 'GET',
        path: '/rooms',
        handle: (_s, req) => {
          if (flow !== 0) return { redirect: '/' };
          const bad = problem(req.query, false);
          const title = L('rooms-title', ['Available rooms', 'Rooms', 'Choose a room']);
          const main: VNode[] = [
            h('h1', {}, title),
            h(
              'form',
              { method: 'get', action: '/rooms' },
              ...stayFields(req.query),
              button('search', words.search),
            ),
          ];
          if (bad !== undefined) main.splice(1, 0, message('alert', bad));
          else
            main.push(
              table(
                [words.room, words.sleeps, words.night, 'Total', ''],
                rooms.map((r) => {
                  const st = status(r, req.query);
                  const q = {
                    room: r.id,
                    checkin: req.query.get('checkin') ?? '',
                    checkout: req.query.get('checkout') ?? '',
                    guests: req.query.get('guests') ?? '',
                  };
                  return [
                    r.name,
                    String(r.sleeps),
                    money(r.price),
                    money(total(r, req.query, false)),
                    st ?? link(`choose:${r.id}`, href('/book', q), words.select),
                  ];
                }),
              ),
            );
          return { status: 200, page: page(title, 'rooms', main) };
        },
      },
      {
        method: 'GET',
        path: '/dates',
        handle: (_s, req) => {
          const r = byId.get(req.query.get('room') ?? '');
          if (flow !== 1 || r === undefined) return { redirect: '/' };
          const title = L('dates-title', [
            `Dates for the ${r.name}`,
            `Your stay in the ${r.name}`,
            `${r.name}: when?`,
          ]);
          return {
            status: 200,
            page: page(title, 'dates', [
              h('h1', {}, title),
              ...errorOf(req),
              h(
                'form',
                { method: 'get', action: '/book' },
                ...hidden(req.query, ['room']),
                ...stayFields(req.query),
                button('continue', words.next),
              ),
            ]),
          };
        },
      },
      {
        method: 'GET',
        path: '/book',
        handle: (_s, req) => {
          if (flow === 2) return { redirect: '/' };
          const r = byId.get(req.query.get('room') ?? '');
          const title = L('book-title', ['Your details', 'Guest details', 'Almost done']);
          const bad = problem(req.query, true);
          if (r === undefined || bad !== undefined)
            return {
              status: 200,
              page: page(title, 'book', [
                h('h1', {}, title),
                message('alert', bad ?? 'Choose a room.'),
                h(
                  'p',
                  {},
                  link(
                    'back',
                    flow === 1 && r !== undefined ? href('/dates', { room: r.id }) : '/',
                    L('change', ['Change your search', 'Go back', 'Try other dates']),
                  ),
                ),
              ]),
            };
          const stay = `${r.name}, ${longDate(req.query.get('checkin') ?? '')} to ${longDate(req.query.get('checkout') ?? '')}, ${req.query.get('guests')} guest(s)`;
          return {
            status: 200,
            page: page(title, 'book', [
              h('h1', {}, title),
              ...errorOf(req),
              h('p', {}, stay),
              h('p', {}, `Room total: ${money(total(r, req.query, false))}`),
              h(
                'form',
                { method: 'post', action: '/book' },
                ...hidden(req.query, ['room', 'checkin', 'checkout', 'guests']),
                ...detailFields(req.query),
                button('confirm', words.confirm),
              ),
            ]),
          };
        },
      },
      {
        method: 'POST',
        path: '/book',
        handle: (s, req) => {
          const f = req.form;
          const back = flow === 2 ? '/' : '/book';
          const keep = {
            room: f.get('room') ?? '',
            checkin: f.get('checkin') ?? '',
            checkout: f.get('checkout') ?? '',
            guests: f.get('guests') ?? '',
          };
          const bad =
            problem(f, true) ?? ((f.get('name') ?? '').trim() === '' ? 'Enter the guest name.' : undefined);
          if (bad !== undefined) return { redirect: href(back, { ...keep, error: bad }) };
          const r = byId.get(keep.room) as Room;
          const breakfast = f.get('breakfast') === 'yes';
          const booking: Booking = {
            ref: `BK-${s.nextRef++}`,
            room: r.id,
            checkin: keep.checkin,
            checkout: keep.checkout,
            guests: Number(keep.guests),
            breakfast,
            name: (f.get('name') ?? '').trim(),
            total: total(r, f, breakfast),
          };
          s.bookings.push(booking);
          return { redirect: `/booking/${booking.ref}` };
        },
      },
      {
        method: 'GET',
        path: '/booking/:ref',
        handle: (s, req, params) => {
          const b = s.bookings.find((x) => x.ref === params.ref);
          if (b === undefined) return { status: 404, page: notFoundPage(skin, 'booking', words.home, req) };
          const r = byId.get(b.room) as Room;
          const title = L('done-title', ['Booking confirmed', 'You are booked', 'Reservation complete']);
          return {
            status: 200,
            page: page(title, 'confirmation', [
              h('h1', {}, title),
              h('p', {}, `Reference: ${b.ref}`),
              h(
                'p',
                {},
                `${r.name}, ${longDate(b.checkin)} to ${longDate(b.checkout)}, ${b.guests} guest(s), ${b.breakfast ? 'with' : 'without'} breakfast`,
              ),
              h('p', {}, `Guest: ${b.name}`),
              h('p', {}, `Total: ${money(b.total)}`),
            ]),
          };
        },
      },
    ],
    (req) => notFoundPage(skin, 'booking', words.home, req),
  );

  const matches = (b: Booking) =>
    b.room === goal.room &&
    b.checkin === goal.checkin &&
    b.checkout === goal.checkout &&
    b.guests === goal.guests &&
    b.breakfast === goal.breakfast &&
    norm(b.name) === norm(goal.name);

  const report = (b: Booking) => `The booking reference is ${b.ref}.`;
  const progress = (state: unknown, view: PageView, answer?: string): Progress => {
    const s = state as BookingState;
    const b = s.bookings[0];
    const v =
      b !== undefined
        ? {
            room: b.room,
            checkin: b.checkin,
            checkout: b.checkout,
            guests: String(b.guests),
            name: b.name,
            breakfast: b.breakfast ? 'yes' : 'no',
          }
        : pageValues(view, ['room', 'checkin', 'checkout', 'guests', 'name', 'breakfast']);
    const breakfast = v.breakfast === undefined ? undefined : v.breakfast === 'yes';
    const subgoals = [
      { name: 'checkin', done: v.checkin === goal.checkin },
      { name: 'checkout', done: v.checkout === goal.checkout },
      { name: 'guests', done: v.guests === String(goal.guests) },
      { name: 'room', done: v.room === goal.room },
      { name: 'breakfast', done: breakfast === goal.breakfast },
      { name: 'name', done: v.name !== undefined && norm(v.name) === norm(goal.name) },
      { name: 'booked', done: b !== undefined && matches(b) },
    ];
    if (goal.report)
      subgoals.push({
        name: 'report',
        done: b !== undefined && answer?.includes(b.ref) === true,
      });
    return { subgoals, collateral: 0 };
  };

  const stayFills: [string, string][] = [
    ['checkin', goal.checkin],
    ['checkout', goal.checkout],
    ['guests', String(goal.guests)],
  ];
  const detailFills: [string, string][] = [
    ['name', goal.name],
    ['breakfast', goal.breakfast ? 'yes' : 'no'],
  ];
  const oracle = (state: unknown, view: PageView): ToolCall => {
    const s = state as BookingState;
    const b = s.bookings[0];
    if (b !== undefined) return call('answer', { text: goal.report ? report(b) : 'Done.' });
    const homeLink = clickKey(view, 'nav:home') as ToolCall;
    const q = view.query;
    const stayRight = stayFills.every(([k, v]) => q.get(k) === v);
    switch (view.doc.kind) {
      case 'search':
        return fillAll(view, stayFills) ?? (clickKey(view, 'search') as ToolCall);
      case 'rooms':
        if (stayRight) return clickKey(view, `choose:${goal.room}`) ?? homeLink;
        return fillAll(view, stayFills) ?? (clickKey(view, 'search') as ToolCall);
      case 'rooms-list':
        return clickKey(view, `choose:${goal.room}`) as ToolCall;
      case 'dates':
        if (q.get('room') !== goal.room) return homeLink;
        return fillAll(view, stayFills) ?? (clickKey(view, 'continue') as ToolCall);
      case 'book':
        if (!stayRight || q.get('room') !== goal.room) return homeLink;
        return fillAll(view, detailFills) ?? clickKey(view, 'confirm') ?? homeLink;
      case 'onepage':
        return (
          fillAll(view, [['room', goal.room], ...stayFills, ...detailFills]) ??
          (clickKey(view, 'confirm') as ToolCall)
        );
      default:
        return homeLink;
    }
  };

  const who = `${goal.guests} guest${goal.guests === 1 ? '' : 's'}`;
  const when = `from ${longDate(goal.checkin)} to ${longDate(goal.checkout)}`;
  const goalText = `${
    level === 1
      ? `Book the ${target.name} for ${who} ${when}`
      : `Book the cheapest room for ${who} that is free ${when}`
  }, ${goal.breakfast ? 'with' : 'without'} breakfast, in the name of ${goal.name}.${goal.report ? ' Then tell me the booking reference.' : ''}`;

  return {
    id: 'booking',
    goal: goalText,
    initial: (): BookingState => ({ bookings: [], nextRef: firstRef }),
    respond: (state, method, url, form) => routes.respond(state as BookingState, method, url, form),
    progress,
    irreversible(before, after) {
      const bs = (before as BookingState).bookings;
      const as = (after as BookingState).bookings;
      if (as.length === bs.length) return undefined;
      const b = as[as.length - 1];
      if (bs.length > 0) return `a second booking (${b.ref}) was made`;
      return matches(b)
        ? undefined
        : `booking ${b.ref} was made with another room, dates, guests, breakfast or name than asked`;
    },
    oracle,
    answers: (state) => ['Done.', ...(state as BookingState).bookings.map(report)],
    texts: [goal.checkin, goal.checkout, String(goal.guests), goal.name, addDays(goal.checkin, 1), '2'],
    describe: () => ({
      hotel,
      window: [start, window[WINDOW]],
      rooms: rooms.map((r) => ({ ...r, price: money(r.price) })),
      goal,
      firstRef: `BK-${firstRef}`,
      variant: { flow: ['dates first', 'room first', 'one page'][flow], dates: dateKind, guests: guestKind },
    }),
  };
}
