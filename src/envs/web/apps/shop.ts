// The shop: search with filters, product pages, a cart, and a checkout with an address and a shipping
// method, ending in an order with a number. Goals ask for one or two products picked by name or by a
// superlative under a price bound ("the cheapest red shirt under $20"), a quantity, an address and a
// shipping method; level 3 also asks for the order number in the answer.
//
// Sub-goals (info.quality): each wanted cart line, the recipient's name, street and city, the shipping
// method, the order placed (and the order number reported). Until an order exists, the address and
// shipping count as the checkout holds them, or as the current page's form shows them; collateral = cart
// lines the goal does not want. Placing an order that differs from the goal (items, address, shipping),
// or a second order, is irreversible.
//
// Flows (variants): checkout as address → shipping → review, shipping → address → review, or one page;
// after "Add to cart" the cart page, or the product page again with a confirmation.
import type { Rng } from '../../../core/rng.ts';
import type { ToolCall } from '../../../core/types.ts';
import {
  button,
  call,
  cap,
  choiceField,
  clickKey,
  fillAll,
  first,
  formValue,
  href,
  link,
  message,
  money,
  norm,
  notFoundPage,
  type PageView,
  type Progress,
  pick,
  Routes,
  shell,
  shuffled,
  table,
  textField,
  type WebApp,
} from '../app.ts';
import { h, type Page, type VNode } from '../dom.ts';
import type { Skin } from '../skin.ts';

const MATERIALS: Record<string, readonly string[]> = {
  shirt: ['Linen', 'Oxford', 'Flannel', 'Denim', 'Poplin'],
  mug: ['Ceramic', 'Enamel', 'Stoneware', 'Travel', 'Espresso'],
  lamp: ['Desk', 'Floor', 'Clip', 'Arc', 'Reading'],
  backpack: ['Canvas', 'Hiking', 'Laptop', 'Rolltop', 'Daypack'],
  scarf: ['Wool', 'Cashmere', 'Cotton', 'Knit', 'Silk'],
  notebook: ['Dotted', 'Ruled', 'Pocket', 'Sketch', 'Spiral'],
};
const PLURAL: Record<string, string> = { scarf: 'Scarves' };
const COLORS = ['red', 'blue', 'green', 'black', 'white', 'yellow'] as const;
export const CITIES = ['Busan', 'Seoul', 'Lyon', 'Porto', 'Oslo', 'Kyoto', 'Austin', 'Leeds'] as const;
export const PEOPLE = [
  'Mina Park',
  'Joon Lee',
  'Ana Silva',
  'Tom Berg',
  'Lea Martin',
  'Sam Okafor',
  'Ivy Chen',
  'Omar Haddad',
] as const;
const STREETS = [
  '12 Harbor Road',
  '4 Elm Street',
  '88 Rue Victor Hugo',
  '7 Rua das Flores',
  '21 Storgata',
  '3 Kamo River Lane',
  '150 Lake Drive',
  '9 Mill Lane',
] as const;
const SHOPS = ['Northwind Goods', 'Maple & Co', 'Harbor Supply', 'Blue Door Store'] as const;

const SHIPPING = [
  { value: 'standard', cost: 400, labels: ['Standard', 'Standard delivery', 'Standard (3–5 days)'] },
  { value: 'express', cost: 1200, labels: ['Express', 'Express delivery', 'Express (1–2 days)'] },
  { value: 'economy', cost: 200, labels: ['Economy', 'Economy delivery', 'Economy (7–10 days)'] },
] as const;
type Shipping = (typeof SHIPPING)[number]['value'];

export interface Product {
  id: string;
  name: string;
  category: string;
  color: string;
  /** Cents. */
  price: number;
}

interface Line {
  id: string;
  qty: number;
}

interface Order {
  number: number;
  items: Line[];
  name: string;
  street: string;
  city: string;
  shipping: string;
  total: number;
}

interface ShopState {
  cart: Line[];
  checkout: { name: string; street: string; city: string; shipping: string };
  orders: Order[];
  nextOrder: number;
}

interface WantedItem extends Line {
  /** How the goal names it, and the search the oracle runs to find it. */
  phrase: string;
  q: string;
  color: string;
}

export interface ShopGoal {
  items: WantedItem[];
  name: string;
  street: string;
  city: string;
  shipping: Shipping;
  report: boolean;
}

const ADDRESS = ['name', 'street', 'city'] as const;

/** 4 of the 6 categories, 3–4 products each, distinct prices. */
function catalog(rng: Rng): Product[] {
  const prices = new Set<number>();
  const price = () => {
    for (;;) {
      const p = (5 + rng.int(55)) * 100 + [0, 50, 99][rng.int(3)];
      if (!prices.has(p)) {
        prices.add(p);
        return p;
      }
    }
  };
  const out: Omit<Product, 'id'>[] = [];
  for (const category of shuffled(rng, Object.keys(MATERIALS)).slice(0, 4))
    for (const m of shuffled(rng, MATERIALS[category]).slice(0, 3 + rng.int(2)))
      out.push({ name: `${m} ${cap(category)}`, category, color: pick(rng, COLORS), price: price() });
  return shuffled(rng, out).map((p, i) => ({ id: `P${101 + i}`, ...p }));
}

/** A superlative item: 2–3 products of one category recoloured to one colour, the bound between. */
function superlative(rng: Rng, products: Product[], category: string, qty: number): WantedItem {
  const color = pick(rng, COLORS);
  const same = products.filter((p) => p.category === category);
  const group = shuffled(rng, same).slice(0, Math.min(same.length, 2 + rng.int(2)));
  for (const p of same)
    if (!group.includes(p) && p.color === color)
      p.color = COLORS[(COLORS.indexOf(color) + 1) % COLORS.length];
  for (const p of group) p.color = color;
  group.sort((a, b) => a.price - b.price);
  const top = group[group.length - 1];
  const second = group[group.length - 2];
  const noun = `${color} ${category}`;
  // "the most expensive … under $B" needs a whole-dollar bound strictly between the top two prices.
  const bound = Math.floor((top.price - 1) / 100);
  const q = qty > 1 ? ` (quantity ${qty})` : '';
  if (rng.int(2) === 1 && bound * 100 > second.price)
    return {
      id: second.id,
      qty,
      phrase: `the most expensive ${noun} under $${bound}${q}`,
      q: category,
      color,
    };
  const under = Math.floor(group[0].price / 500) * 5 + 5 + 5 * rng.int(3);
  return { id: group[0].id, qty, phrase: `the cheapest ${noun} under $${under}${q}`, q: category, color };
}

const named = (p: Product): WantedItem => ({
  id: p.id,
  qty: 1,
  phrase: `the ${p.color} ${p.name}`,
  q: p.name.toLowerCase(),
  color: '',
});

function goalOf(rng: Rng, products: Product[], level: 1 | 2 | 3): ShopGoal {
  const categories = [...new Set(products.map((p) => p.category))];
  const items: WantedItem[] = [];
  if (level === 1) items.push(named(pick(rng, products)));
  else {
    const c = pick(rng, categories);
    const two = level === 3 && rng.int(2) === 0;
    items.push(superlative(rng, products, c, two ? 2 : 1));
    if (level === 3 && !two)
      items.push(
        named(
          pick(
            rng,
            products.filter((p) => p.category !== c),
          ),
        ),
      );
  }
  const i = rng.int(PEOPLE.length);
  return {
    items,
    name: PEOPLE[i],
    street: STREETS[i],
    city: CITIES[rng.int(CITIES.length)],
    shipping: level === 1 ? 'standard' : pick(rng, SHIPPING).value,
    report: level === 3,
  };
}

function goalText(g: ShopGoal): string {
  const what = g.items.map((x) => x.phrase).join(' and ');
  const it = g.items.length > 1 || g.items[0].qty > 1 ? 'them' : 'it';
  return `Buy ${what} and ship ${it} to ${g.name}, ${g.street}, ${g.city} by ${g.shipping} shipping.${g.report ? ' Then tell me the order number.' : ''}`;
}

const sameLines = (a: readonly Line[], b: readonly Line[]) =>
  a.length === b.length && a.every((x) => b.some((y) => y.id === x.id && y.qty === x.qty));

/** The shop for a task: catalog and goal from `rng`, pages from `skin`. */
export function buildShop(rng: Rng, level: 1 | 2 | 3, skin: Skin): WebApp {
  const products = catalog(rng);
  const goal = goalOf(rng, products, level);
  const shopName = pick(rng, SHOPS);
  const firstOrder = 1000 + rng.int(9000);
  const byId = new Map(products.map((p) => [p.id, p]));

  const L = (key: string, synonyms: readonly string[]) => skin.label(`shop.${key}`, synonyms);
  const cartWord = L('cart', ['Cart', 'Basket', 'Bag']);
  const words = {
    home: L('home', ['Home', 'Shop home', 'Start']),
    q: L('q', ['Search', 'Search products', 'Find']),
    color: L('color', ['Color', 'Colour', 'Filter by color']),
    max: L('max', ['Max price', 'Price up to', 'Maximum price']),
    sort: L('sort', ['Sort by', 'Order by', 'Sort']),
    go: L('go', ['Search', 'Apply', 'Go']),
    view: L('view', ['View', 'Details', 'Open']),
    qty: L('qty', ['Quantity', 'Qty', 'Amount']),
    add: L('add', [`Add to ${cartWord.toLowerCase()}`, 'Add', `Put in ${cartWord.toLowerCase()}`]),
    remove: L('remove', ['Remove', 'Delete', 'Take out']),
    checkout: L('checkout', ['Checkout', 'Proceed to checkout', 'Check out']),
    name: L('name', ['Full name', 'Name', 'Recipient']),
    street: L('street', ['Street', 'Street address', 'Address line']),
    city: L('city', ['City', 'Town', 'City or town']),
    shipping: L('shipping', ['Shipping', 'Delivery', 'Shipping method']),
    next: L('continue', ['Continue', 'Next', 'Save and continue']),
    place: L('place', ['Place order', 'Confirm order', 'Buy now']),
    results: L('results', ['Search results', 'Results', 'Products found']),
  };
  const shipLabel = (s: (typeof SHIPPING)[number]) =>
    `${skin.label(`shop.ship.${s.value}`, s.labels)} (${money(s.cost)})`;
  const shipOptions = SHIPPING.map((s) => ({ value: s.value, label: shipLabel(s) }));
  const colorOptions = [{ value: '', label: 'Any' }, ...COLORS.map((c) => ({ value: c, label: cap(c) }))];
  const sortOptions = [
    { value: 'relevance', label: 'Relevance' },
    { value: 'price-asc', label: 'Price: low to high' },
    { value: 'price-desc', label: 'Price: high to low' },
  ];
  const checkoutFlow = skin.flow('shop.checkout', 3);
  const steps = checkoutFlow === 0 ? ['address', 'shipping'] : ['shipping', 'address'];
  const afterAdd = skin.flow('shop.after-add', 2);

  const count = (s: ShopState) => s.cart.reduce((a, l) => a + l.qty, 0);
  const page = (s: ShopState, title: string, kind: string, main: VNode[]): Page =>
    shell(
      skin,
      'shop',
      title === shopName ? title : `${title} — ${shopName}`,
      kind,
      skin.order('shop.nav', [
        link('nav:home', '/', words.home),
        link('nav:cart', '/cart', `${cartWord} (${count(s)})`),
      ]),
      main,
    );
  const lineRows = (lines: readonly Line[]) =>
    lines.map((l) => {
      const p = byId.get(l.id) as Product;
      return [p.name, String(l.qty), money(p.price * l.qty)];
    });
  const subtotal = (lines: readonly Line[]) =>
    lines.reduce((a, l) => a + (byId.get(l.id) as Product).price * l.qty, 0);
  const shipCost = (v: string) => SHIPPING.find((x) => x.value === v)?.cost ?? 0;

  const searchForm = (q: URLSearchParams) =>
    h(
      'form',
      { method: 'get', action: '/search' },
      skin.order('shop.filters', [
        textField('q', words.q, q.get('q') ?? ''),
        choiceField(
          skin.kind('shop.color', ['select', 'radio'] as const),
          'color',
          words.color,
          colorOptions,
          q.get('color') ?? '',
        ),
        textField('max', words.max, q.get('max') ?? ''),
        choiceField(
          skin.kind('shop.sort', ['select', 'radio'] as const),
          'sort',
          words.sort,
          sortOptions,
          q.get('sort') ?? 'relevance',
        ),
      ]),
      button('search', words.go),
    );

  const matches = (q: URLSearchParams): Product[] => {
    const terms = norm(q.get('q') ?? '')
      .split(' ')
      .filter((t) => t !== '')
      .map((t) => t.replace(/s$/, ''));
    const color = q.get('color') ?? '';
    const max = Number(q.get('max') ?? '');
    const hits = products.filter((p) => {
      const text = norm(`${p.name} ${p.color} ${p.category}`);
      return (
        terms.every((t) => text.includes(t)) &&
        (color === '' || p.color === color) &&
        (q.get('max') === null || q.get('max') === '' || !Number.isFinite(max) || p.price <= max * 100)
      );
    });
    const sort = q.get('sort');
    if (sort === 'price-asc') hits.sort((a, b) => a.price - b.price);
    if (sort === 'price-desc') hits.sort((a, b) => b.price - a.price);
    return hits;
  };

  const checkoutFields = (s: ShopState, which: 'address' | 'shipping') =>
    which === 'address'
      ? ADDRESS.map((f) => textField(f, words[f], s.checkout[f]))
      : [
          choiceField(
            skin.kind('shop.shipping', ['radio', 'select'] as const),
            'shipping',
            words.shipping,
            shipOptions,
            s.checkout.shipping || 'standard',
          ),
        ];
  const missingStep = (s: ShopState): 'address' | 'shipping' | undefined => {
    const address = ADDRESS.some((f) => s.checkout[f].trim() === '');
    const shipping = !SHIPPING.some((x) => x.value === s.checkout.shipping);
    return steps.find((x) => (x === 'address' ? address : shipping)) as 'address' | 'shipping' | undefined;
  };
  const stepUrl = (step: string) => (checkoutFlow === 2 ? '/checkout' : `/checkout/${step}`);
  const errorLine = (q: URLSearchParams) =>
    q.get('error') === 'missing' ? [message('alert', 'Please fill in every field.')] : [];

  const routes = new Routes<ShopState>(
    [
      {
        method: 'GET',
        path: '/',
        handle: (s, req) => ({
          status: 200,
          page: page(s, shopName, 'home', [
            h('h1', {}, L('welcome', [`Welcome to ${shopName}`, shopName, `${shopName}: shop online`])),
            searchForm(req.query),
            h('h2', {}, L('categories', ['Categories', 'Browse', 'Departments'])),
            h(
              'p',
              {},
              [...new Set(products.map((p) => p.category))]
                .sort()
                .map((c) => link(`cat:${c}`, href('/search', { q: c }), PLURAL[c] ?? `${cap(c)}s`)),
            ),
          ]),
        }),
      },
      {
        method: 'GET',
        path: '/search',
        handle: (s, req) => {
          const hits = matches(req.query);
          const cols = skin.order('shop.columns', ['name', 'color', 'price'] as const);
          const heads = { name: 'Product', color: words.color, price: 'Price' };
          const cells = (p: Product) => ({ name: p.name, color: cap(p.color), price: money(p.price) });
          const results =
            hits.length === 0
              ? [h('p', {}, 'No products match.')]
              : [
                  h('p', {}, `${hits.length} product${hits.length === 1 ? '' : 's'} found.`),
                  table(
                    [...cols.map((c) => heads[c]), ''],
                    hits.map((p) => [
                      ...cols.map((c) => cells(p)[c]),
                      link(`view:${p.id}`, `/product/${p.id}`, words.view),
                    ]),
                  ),
                ];
          const parts = skin.order('shop.search-layout', [[searchForm(req.query)], results]);
          return {
            status: 200,
            page: page(s, words.results, 'search', [h('h1', {}, words.results), ...parts.flat()]),
          };
        },
      },
      {
        method: 'GET',
        path: '/product/:id',
        handle: (s, req, params) => {
          const p = byId.get(params.id);
          if (p === undefined) return { status: 404, page: notFoundPage(skin, 'shop', words.home, req) };
          const qtyOptions = [1, 2, 3, 4, 5].map((n) => ({ value: String(n), label: String(n) }));
          const notes =
            req.query.get('added') === '1'
              ? [message('status', `Added to your ${cartWord.toLowerCase()}.`)]
              : [];
          if (req.query.get('error') === 'qty')
            notes.push(message('alert', 'Choose a quantity from 1 to 5.'));
          return {
            status: 200,
            page: page(s, p.name, 'product', [
              h('h1', {}, p.name),
              ...notes,
              ...skin.order('shop.product-facts', [
                h('p', {}, `${words.color}: ${cap(p.color)}`),
                h('p', {}, `Price: ${money(p.price)}`),
              ]),
              h(
                'form',
                { method: 'post', action: '/cart/add' },
                h('input', { type: 'hidden', name: 'id', value: p.id }),
                choiceField(
                  skin.kind('shop.qty', ['select', 'text', 'radio'] as const),
                  'qty',
                  words.qty,
                  qtyOptions,
                  '1',
                ),
                button('add', words.add),
              ),
            ]),
          };
        },
      },
      {
        method: 'POST',
        path: '/cart/add',
        handle: (s, req) => {
          const id = req.form.get('id') ?? '';
          const qty = Number(req.form.get('qty'));
          if (!byId.has(id)) return { redirect: '/' };
          if (!Number.isInteger(qty) || qty < 1 || qty > 5)
            return { redirect: href(`/product/${id}`, { error: 'qty' }) };
          const line = s.cart.find((l) => l.id === id);
          if (line === undefined) s.cart.push({ id, qty });
          else line.qty = Math.min(9, line.qty + qty);
          return { redirect: afterAdd === 0 ? '/cart' : href(`/product/${id}`, { added: 1 }) };
        },
      },
      {
        method: 'GET',
        path: '/cart',
        handle: (s, req) => {
          const main: VNode[] = [h('h1', {}, `Your ${cartWord.toLowerCase()}`)];
          if (req.query.get('error') === 'empty')
            main.push(message('alert', `Your ${cartWord.toLowerCase()} is empty.`));
          if (s.cart.length === 0) main.push(h('p', {}, 'Nothing here yet.'));
          else
            main.push(
              h(
                'form',
                { method: 'post', action: '/cart/remove' },
                table(
                  ['Product', words.qty, 'Price', ''],
                  lineRows(s.cart).map((r, i) => [
                    ...r,
                    button(`remove:${s.cart[i].id}`, words.remove, { name: 'remove', value: s.cart[i].id }),
                  ]),
                ),
              ),
              h('p', {}, `Subtotal: ${money(subtotal(s.cart))}`),
              h('p', {}, link('checkout', '/checkout', words.checkout)),
            );
          return { status: 200, page: page(s, `Your ${cartWord.toLowerCase()}`, 'cart', main) };
        },
      },
      {
        method: 'POST',
        path: '/cart/remove',
        handle: (s, req) => {
          const id = req.form.get('remove');
          s.cart = s.cart.filter((l) => l.id !== id);
          return { redirect: '/cart' };
        },
      },
      {
        method: 'GET',
        path: '/checkout',
        handle: (s, req) => {
          if (s.cart.length === 0) return { redirect: '/cart' };
          if (checkoutFlow !== 2) return { redirect: stepUrl(steps[0]) };
          const sections = skin.order('shop.onepage', [
            checkoutFields(s, 'address'),
            checkoutFields(s, 'shipping'),
          ]);
          return {
            status: 200,
            page: page(s, words.checkout, 'checkout', [
              h('h1', {}, words.checkout),
              ...errorLine(req.query),
              table(['Product', words.qty, 'Price'], lineRows(s.cart)),
              h(
                'form',
                { method: 'post', action: '/checkout/place' },
                ...sections.flat(),
                button('place', words.place),
              ),
            ]),
          };
        },
      },
      ...(['address', 'shipping'] as const).flatMap((step) => [
        {
          method: 'GET' as const,
          path: `/checkout/${step}`,
          handle: (s: ShopState, req: { query: URLSearchParams }) => {
            if (s.cart.length === 0) return { redirect: '/cart' };
            if (checkoutFlow === 2) return { redirect: '/checkout' };
            const title =
              step === 'address'
                ? L('address-title', ['Shipping address', 'Where to?', 'Delivery address'])
                : words.shipping;
            return {
              status: 200,
              page: page(s, title, step, [
                h('h1', {}, title),
                ...errorLine(req.query),
                h(
                  'form',
                  { method: 'post', action: `/checkout/${step}` },
                  ...checkoutFields(s, step),
                  button('continue', words.next),
                ),
              ]),
            };
          },
        },
        {
          method: 'POST' as const,
          path: `/checkout/${step}`,
          handle: (s: ShopState, req: { form: URLSearchParams }) => {
            if (step === 'address') for (const f of ADDRESS) s.checkout[f] = (req.form.get(f) ?? '').trim();
            else s.checkout.shipping = req.form.get('shipping') ?? '';
            const missing =
              step === 'address'
                ? ADDRESS.some((f) => s.checkout[f] === '')
                : !SHIPPING.some((x) => x.value === s.checkout.shipping);
            if (missing) return { redirect: href(`/checkout/${step}`, { error: 'missing' }) };
            const next = steps.indexOf(step) + 1;
            return { redirect: next < steps.length ? `/checkout/${steps[next]}` : '/checkout/review' };
          },
        },
      ]),
      {
        method: 'GET',
        path: '/checkout/review',
        handle: (s) => {
          if (s.cart.length === 0) return { redirect: '/cart' };
          const missing = missingStep(s);
          if (checkoutFlow === 2 || missing !== undefined) return { redirect: stepUrl(missing ?? 'address') };
          const total = subtotal(s.cart) + shipCost(s.checkout.shipping);
          const ship = shipOptions.find((o) => o.value === s.checkout.shipping)?.label ?? '';
          const title = L('review-title', ['Review your order', 'Order summary', 'Check your order']);
          return {
            status: 200,
            page: page(s, title, 'review', [
              h('h1', {}, title),
              table(['Product', words.qty, 'Price'], lineRows(s.cart)),
              ...skin
                .order('shop.review', [
                  [
                    h('p', {}, `Ship to: ${s.checkout.name}, ${s.checkout.street}, ${s.checkout.city}`),
                    h(
                      'p',
                      {},
                      link(
                        'change:address',
                        '/checkout/address',
                        L('change-address', ['Change address', 'Edit address', 'Use another address']),
                      ),
                    ),
                  ],
                  [
                    h('p', {}, `${words.shipping}: ${ship}`),
                    h(
                      'p',
                      {},
                      link(
                        'change:shipping',
                        '/checkout/shipping',
                        L('change-shipping', ['Change shipping', 'Edit shipping', 'Choose another method']),
                      ),
                    ),
                  ],
                ])
                .flat(),
              h('p', {}, `Total: ${money(total)}`),
              h('form', { method: 'post', action: '/checkout/place' }, button('place', words.place)),
            ]),
          };
        },
      },
      {
        method: 'POST',
        path: '/checkout/place',
        handle: (s, req) => {
          if (s.cart.length === 0) return { redirect: href('/cart', { error: 'empty' }) };
          if (checkoutFlow === 2) {
            for (const f of ADDRESS) s.checkout[f] = (req.form.get(f) ?? '').trim();
            s.checkout.shipping = req.form.get('shipping') ?? '';
          }
          const missing = missingStep(s);
          if (missing !== undefined) return { redirect: href(stepUrl(missing), { error: 'missing' }) };
          const order: Order = {
            number: s.nextOrder++,
            items: s.cart.map((l) => ({ ...l })),
            ...s.checkout,
            total: subtotal(s.cart) + shipCost(s.checkout.shipping),
          };
          s.orders.push(order);
          s.cart = [];
          return { redirect: `/order/${order.number}` };
        },
      },
      {
        method: 'GET',
        path: '/order/:number',
        handle: (s, req, params) => {
          const o = s.orders.find((x) => String(x.number) === params.number);
          if (o === undefined) return { status: 404, page: notFoundPage(skin, 'shop', words.home, req) };
          const title = L('thanks', ['Thank you for your order', 'Order placed', 'Order confirmed']);
          return {
            status: 200,
            page: page(s, title, 'order', [
              h('h1', {}, title),
              h('p', {}, `Order number: ${o.number}`),
              table(['Product', words.qty, 'Price'], lineRows(o.items)),
              h('p', {}, `Ship to: ${o.name}, ${o.street}, ${o.city}`),
              h(
                'p',
                {},
                `${words.shipping}: ${shipOptions.find((x) => x.value === o.shipping)?.label ?? ''}`,
              ),
              h('p', {}, `Total: ${money(o.total)}`),
            ]),
          };
        },
      },
    ],
    (req) => notFoundPage(skin, 'shop', words.home, req),
  );

  const wanted: Line[] = goal.items.map((x) => ({ id: x.id, qty: x.qty }));
  const orderMatches = (o: Order) =>
    sameLines(o.items, wanted) &&
    norm(o.name) === norm(goal.name) &&
    norm(o.street) === norm(goal.street) &&
    norm(o.city) === norm(goal.city) &&
    o.shipping === goal.shipping;

  const report = (o: Order) => `The order number is ${o.number}.`;
  const progress = (state: unknown, view: PageView, answer?: string): Progress => {
    const s = state as ShopState;
    const o = s.orders[0];
    const lines = o === undefined ? s.cart : o.items;
    const value = (f: 'name' | 'street' | 'city' | 'shipping') =>
      o !== undefined ? o[f] : (formValue(view, f) ?? s.checkout[f]);
    const subgoals = [
      ...wanted.map((w) => ({
        name: `cart:${w.id}x${w.qty}`,
        done: lines.some((l) => l.id === w.id && l.qty === w.qty),
      })),
      ...ADDRESS.map((f) => ({ name: f, done: norm(value(f)) === norm(goal[f]) })),
      { name: 'shipping', done: value('shipping') === goal.shipping },
      { name: 'order', done: o !== undefined && orderMatches(o) },
    ];
    if (goal.report)
      subgoals.push({
        name: 'report',
        done: o !== undefined && answer?.includes(String(o.number)) === true,
      });
    return { subgoals, collateral: lines.filter((l) => !wanted.some((w) => w.id === l.id)).length };
  };

  const oracle = (state: unknown, view: PageView): ToolCall => {
    const s = state as ShopState;
    const kind = view.doc.kind;
    const o = s.orders[0];
    if (o !== undefined)
      return call('answer', { text: goal.report ? `The order number is ${o.number}.` : 'Done.' });
    const home = clickKey(view, 'nav:home') as ToolCall;
    const cart = clickKey(view, 'nav:cart') as ToolCall;
    const extra = s.cart.find((l) => !wanted.some((w) => w.id === l.id && w.qty === l.qty));
    if (extra !== undefined)
      return kind === 'cart' ? (clickKey(view, `remove:${extra.id}`) as ToolCall) : cart;
    const missing = goal.items.find((w) => !s.cart.some((l) => l.id === w.id));
    if (missing !== undefined) {
      if (view.path === `/product/${missing.id}`)
        return first(fillAll(view, [['qty', String(missing.qty)]]), clickKey(view, 'add')) as ToolCall;
      const search: [string, string][] = [
        ['q', missing.q],
        ['color', missing.color],
        ['max', ''],
      ];
      const applied = kind === 'search' && search.every(([k, v]) => (view.query.get(k) ?? '') === v);
      if (applied) return clickKey(view, `view:${missing.id}`) ?? home;
      if (formValue(view, 'q') !== undefined)
        return fillAll(view, search) ?? (clickKey(view, 'search') as ToolCall);
      return home;
    }
    const fills: [string, string][] = [
      ['name', goal.name],
      ['street', goal.street],
      ['city', goal.city],
      ['shipping', goal.shipping],
    ];
    if (kind === 'address' || kind === 'shipping' || kind === 'checkout')
      return fillAll(view, fills) ?? (clickKey(view, kind === 'checkout' ? 'place' : 'continue') as ToolCall);
    if (kind === 'review') {
      const wrongAddress = ADDRESS.some((f) => norm(s.checkout[f]) !== norm(goal[f]));
      if (wrongAddress) return clickKey(view, 'change:address') as ToolCall;
      if (s.checkout.shipping !== goal.shipping) return clickKey(view, 'change:shipping') as ToolCall;
      return clickKey(view, 'place') as ToolCall;
    }
    if (kind === 'cart') return clickKey(view, 'checkout') as ToolCall;
    return cart;
  };

  return {
    id: 'shop',
    goal: goalText(goal),
    initial: (): ShopState => ({
      cart: [],
      checkout: { name: '', street: '', city: '', shipping: '' },
      orders: [],
      nextOrder: firstOrder,
    }),
    respond: (state, method, url, form) => routes.respond(state as ShopState, method, url, form),
    progress,
    irreversible(before, after) {
      const b = before as ShopState;
      const a = after as ShopState;
      if (a.orders.length === b.orders.length) return undefined;
      const o = a.orders[a.orders.length - 1];
      if (b.orders.length > 0) return `a second order (${o.number}) was placed`;
      return orderMatches(o)
        ? undefined
        : `order ${o.number} was placed with other items, address or shipping than asked`;
    },
    oracle,
    answers: (state) => ['Done.', ...(state as ShopState).orders.map(report)],
    texts: [
      goal.name,
      goal.street,
      goal.city,
      CITIES[(CITIES.indexOf(goal.city as (typeof CITIES)[number]) + 1) % CITIES.length],
      ...new Set(goal.items.map((x) => x.q)),
      '2',
    ],
    describe: () => ({
      shop: shopName,
      products: products.map((p) => ({ ...p, price: money(p.price) })),
      goal: { ...goal, items: goal.items.map(({ id, qty, phrase }) => ({ id, qty, phrase })) },
      firstOrder,
      variant: {
        checkout: ['address, shipping, review', 'shipping, address, review', 'one page'][checkoutFlow],
        afterAdd: ['cart', 'product page'][afterAdd],
      },
    }),
  };
}
