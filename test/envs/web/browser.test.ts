// The web env in browser mode: the same apps served over loopback HTTP and driven in Debian's chromium
// (playwright-core), the page read from chromium's own accessibility tree. Both modes give the same
// trajectories — byte for byte: observations (page text, URL), actions, rewards, infos — for the oracle
// and for random, on every flow of every app; a restore brings chromium to the restored page and values.
// Without chromium the tests skip with a one-line notice, unless CI is set (test/ui/chromium.ts).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { StepResult, Task, ToolCall, Trajectory } from '../../../src/core/types.ts';
import { envConfig, envs, makeEnv } from '../../../src/envs/index.ts';
import { describeWeb, type WebEnv, type WebObservation } from '../../../src/envs/web/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import { rollout } from '../../../src/rollout/batch.ts';
import { CHROMIUM, missingFor, skipFor } from '../../ui/chromium.ts';

const WHOSE = "the web env's";
/** Under CI without chromium each test fails saying so (before anything could find another one). */
const needChromium = () => {
  if (CHROMIUM === undefined) throw new Error(missingFor(WHOSE));
};

const FLOW_KEY = { shop: 'checkout', booking: 'flow', admin: 'delete' } as const;

/** For each app, a variant of each of its flows (the canonical one first). */
function flowVariants(): { domain: keyof typeof FLOW_KEY; variant: number }[] {
  const out: { domain: keyof typeof FLOW_KEY; variant: number }[] = [];
  for (const domain of Object.keys(FLOW_KEY) as (keyof typeof FLOW_KEY)[]) {
    const flows = new Set<string>();
    for (let variant = 0; flows.size < 3; variant++) {
      const d = describeWeb({ ...envConfig('web', { domain, variant }), seed: 0 }) as {
        data: { variant: Record<string, string> };
      };
      const flow = d.data.variant[FLOW_KEY[domain]];
      if (flows.has(flow)) continue;
      flows.add(flow);
      out.push({ domain, variant });
    }
  }
  return out;
}

async function both(tasks: Task[], policy: string): Promise<[Trajectory[], Trajectory[]]> {
  const go = (browser: boolean) =>
    rollout({
      tasks: tasks.map((t) => ({ ...t, params: { ...t.params, browser } })),
      samples: 1,
      budget: 40,
      runSeed: 3,
      policy: makePolicy(policy, envs.spec(tasks[0])),
      makeEnv: envs.make,
      concurrency: 3,
    }) as Promise<Trajectory[]>;
  return [await go(false), await go(true)];
}
const withoutMode = (t: Trajectory) => ({
  ...t,
  task: { ...t.task, params: { ...t.task.params, browser: null } },
});

describe('the web env in headless chromium', { skip: skipFor(WHOSE) }, () => {
  const cases = flowVariants();

  test('the oracle’s trajectories are the same in process and in chromium, on every flow of every app', async () => {
    needChromium();
    const tasks = cases.flatMap(({ domain, variant }) =>
      [0, 1].map((seed) => ({ ...envConfig('web', { domain, variant }), seed })),
    );
    const [inProcess, browser] = await both(tasks, 'oracle');
    assert.equal(browser.length, 18);
    for (const [i, t] of browser.entries()) {
      assert.equal(t.outcome.success, true, JSON.stringify(t.task));
      assert.deepEqual(withoutMode(t), withoutMode(inProcess[i]));
    }
  });

  test('random’s trajectories are the same too (every kind of action, error pages, back, bad ids)', async () => {
    needChromium();
    const tasks = cases.map(({ domain, variant }) => ({
      ...envConfig('web', { domain, variant, misuse: 5 }),
      seed: 11,
    }));
    const [inProcess, browser] = await both(tasks, 'random');
    const kinds = new Set<string>();
    for (const [i, t] of browser.entries()) {
      assert.deepEqual(withoutMode(t), withoutMode(inProcess[i]));
      for (const turn of t.turns) kinds.add((turn.action as ToolCall).name);
    }
    assert.deepEqual([...kinds].sort(), ['answer', 'back', 'click', 'select', 'submit', 'type']);
  });

  test('actions the menu never takes — goto with spaces, dot segments and unknown paths, bad ids — the same in both modes', async () => {
    needChromium();
    const t = { ...envConfig('web', { domain: 'shop', misuse: 10 }), seed: 5 };
    const script: ToolCall[] = [
      { name: 'goto', arguments: { url: '/search?q=red shirt&color=' } },
      { name: 'goto', arguments: { url: '/cart/../product/P101' } },
      { name: 'goto', arguments: { url: '/nowhere?x=1' } },
      { name: 'click', arguments: { id: '99999' } },
      { name: 'back', arguments: {} },
      { name: 'submit', arguments: {} },
      { name: 'goto', arguments: { url: '//elsewhere.example/' } },
    ];
    const local = makeEnv(t) as unknown as WebEnv;
    const remote = makeEnv({ ...t, params: { ...t.params, browser: true } }) as unknown as WebEnv;
    try {
      assert.deepEqual(await remote.reset(0), local.reset(0));
      for (const a of script) assert.deepEqual(await remote.step(a), local.step(a), JSON.stringify(a));
      // submit() sent the product page's only form: P101 is in the cart.
      assert.equal(local.view().url, '/cart');
    } finally {
      await remote.close();
    }
  });

  test('a restore brings chromium to the restored page with the restored values', async () => {
    needChromium();
    const t = { ...envConfig('web', { domain: 'shop', level: 1 }), seed: 2 };
    const local = makeEnv(t) as unknown as WebEnv;
    local.reset(0);
    // The oracle up to the address form, two of its fields typed: values chromium must be given back.
    let typed = 0;
    while (typed < 2) {
      const a = local.oracleAction();
      local.step(a);
      if (a.name === 'type' && local.view().doc.kind === 'address') typed++;
    }
    const snap = local.snapshot();
    const next = local.oracleAction();
    const expected = local.step(next) as StepResult<WebObservation>;
    const remote = makeEnv({ ...t, params: { ...t.params, browser: true } }) as unknown as WebEnv;
    try {
      await remote.reset(0);
      remote.restore(snap);
      const got = (await remote.step(next)) as StepResult<WebObservation>;
      assert.deepEqual(got, expected);
      assert.match(got.observation.page, /textbox '[^']+' value='[^']+'\n\t*StaticText/);
    } finally {
      await remote.close();
    }
    await assert.rejects(async () => remote.reset(0), /after close/);
  });
});
