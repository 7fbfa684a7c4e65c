// The training config as one declaration: policy-kind defaults resolved from their fields, the credit
// fields agreeing with what each method declares, and the defaults the methods declare agreeing with
// what their estimators do.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { z } from 'zod';
import { InputError } from '../../src/core/errors.ts';
import { defaultOf, getPath, metaOf, paramsOf } from '../../src/core/params.ts';
import {
  CREDIT_PARAM_NAMES,
  CREDIT_PARAMS,
  creditBatch,
  METHOD_NAMES,
  METHOD_PARAMS,
  type MethodName,
  methodOptions,
} from '../../src/credit/index.ts';
import { envSpec } from '../../src/envs/index.ts';
import { ACTIVATIONS } from '../../src/nn/layers.ts';
import { mlpPolicyConfig, NeuralPolicy } from '../../src/policies/neural.ts';
import { freshTransformerPolicy } from '../../src/policies/transformer.ts';
import { StudyConfigSchema } from '../../src/studies/budget/config.ts';
import { parseTrainConfig, TrainConfigSchema } from '../../src/train/config.ts';
import { creditMethod } from '../../src/train/config-sections.ts';
import { traj } from '../credit/fixtures.ts';

const env = { env: 'frozenlake', params: { map: '4x4', slippery: true } };

test('policy-kind defaults: tables and MLPs get the documented values, in the saved key order', () => {
  const table = parseTrainConfig({ env });
  assert.equal(table.iters, 300);
  assert.equal(table.groups, 16);
  assert.deepEqual(table.optim, { maxGradNorm: 1, weightDecay: 0, lr: 0.1, anneal: false });
  assert.deepEqual(
    [table.ppo.epochs, table.ppo.minibatches, table.ppo.entCoef, table.ppo.clipHigh],
    [2, 2, 0, 0.28],
  );
  const mlp = parseTrainConfig({ env, policy: { kind: 'mlp' } });
  assert.equal(mlp.groups, 64);
  assert.deepEqual(mlp.optim, { maxGradNorm: 1, weightDecay: 0, lr: 3e-3, anneal: true });
  assert.deepEqual([mlp.ppo.epochs, mlp.ppo.minibatches, mlp.ppo.entCoef], [4, 4, 0.05]);
  // A resolved default goes after the declared ones (the layout config.json always had).
  assert.deepEqual(Object.keys(mlp.optim), ['maxGradNorm', 'weightDecay', 'lr', 'anneal']);
  assert.deepEqual(Object.keys(mlp).slice(-2), ['seed', 'groups']);
  // A value given wins over the policy-kind default.
  const given = parseTrainConfig({ env, policy: { kind: 'mlp' }, optim: { lr: 0.5 }, groups: 3 });
  assert.equal(given.optim.lr, 0.5);
  assert.equal(given.groups, 3);
  // The declarations say which fields those are.
  const byKind = paramsOf(TrainConfigSchema)
    .filter((p) => p.meta.defaults?.by === 'policy kind')
    .map((p) => p.path);
  assert.deepEqual(byKind, [
    'groups',
    'optim.lr',
    'optim.anneal',
    'ppo.epochs',
    'ppo.minibatches',
    'ppo.entCoef',
  ]);
});

test('policy-kind defaults: a saved transformer gets its own; an MLP checkpoint the neural ones', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tw-config-'));
  try {
    const lake = envSpec({ env: 'frozenlake', params: { map: '4x4', slippery: true }, seed: 0 });
    const file = join(dir, 'lm.safetensors');
    freshTransformerPolicy({ layers: 1, d: 16, heads: 2, ctx: 256 }, lake, 'lm').save(file);
    const lm = parseTrainConfig({ env, policy: { kind: 'checkpoint', path: file } });
    assert.equal(lm.groups, 8);
    assert.deepEqual(lm.optim, { maxGradNorm: 1, weightDecay: 0, lr: 3e-4, anneal: false });
    assert.deepEqual([lm.ppo.epochs, lm.ppo.minibatches, lm.ppo.entCoef], [1, 2, 0]);
    const mlpFile = join(dir, 'mlp.safetensors');
    new NeuralPolicy(mlpPolicyConfig(lake, { hidden: [8] }, 'policy')).save(mlpFile);
    const mlp = parseTrainConfig({ env, policy: { kind: 'checkpoint', path: mlpFile } });
    assert.deepEqual([mlp.groups, mlp.optim.lr, mlp.ppo.entCoef], [64, 3e-3, 0.05]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('every field is described: the declaration carries the help and the config-file documentation', () => {
  for (const schema of [TrainConfigSchema, StudyConfigSchema]) {
    const undocumented = paramsOf(schema).filter((p) => p.meta.description === undefined);
    assert.deepEqual(
      undocumented.map((p) => p.path),
      [],
    );
  }
  assert.equal(
    metaOf(TrainConfigSchema.shape.ppo.unwrap().shape.clipHigh).description,
    'ε_high of the ratio clip (DAPO clip-higher)',
  );
});

test("each default is declared once, on its field: a section left out holds its fields' defaults", () => {
  const params = paramsOf(TrainConfigSchema);
  // A section's default is the parse of nothing (zod's prefault), never an object repeating its fields.
  const sections = params.filter((p) => p.group && p.path !== 'env');
  assert.deepEqual(
    sections.filter((p) => p.default !== undefined).map((p) => p.path),
    [],
  );
  assert.ok(sections.length >= 9, sections.map((p) => p.path).join(', '));
  // shaping and rehearsal are sections absent by default; given, they hold their fields' defaults too.
  const parsed = TrainConfigSchema.parse({
    env,
    shaping: { kind: 'potential' },
    rehearsal: { ratio: 1 },
  }) as Record<string, unknown>;
  const fields = params.filter((p) => !p.group && p.default !== undefined && !p.path.startsWith('env.'));
  assert.ok(fields.length >= 30, `${fields.length} fields with a default`);
  for (const p of fields) assert.deepEqual(getPath(parsed, p.path), p.default?.value, p.path);
});

test('the credit default by algo is declared once: the help shows the method a run uses', () => {
  const declared = metaOf(TrainConfigSchema.shape.credit.unwrap().shape.method).defaults;
  assert.equal(declared?.by, 'algo');
  for (const algo of ['grpo', 'ppo', 'rtpo'] as const) {
    assert.equal(declared?.values[algo], creditMethod({ algo, credit: {} }), algo);
    assert.equal(declared?.values[algo], creditMethod(parseTrainConfig({ env, algo })), algo);
  }
  assert.deepEqual(declared?.values, { grpo: 'grpo', ppo: 'gae', rtpo: 'rtpo' });
});

test('one list of activations: the config takes each of them and refuses anything else naming them', () => {
  for (const activation of ACTIVATIONS) {
    const { policy } = parseTrainConfig({ env, policy: { kind: 'mlp', activation } });
    assert.deepEqual(policy, { kind: 'mlp', hidden: [64, 64], activation, budgetAware: false });
  }
  assert.throws(
    () => parseTrainConfig({ env, policy: { kind: 'mlp', activation: 'sigmoid' } }),
    (e: Error) => e instanceof InputError && ACTIVATIONS.every((a) => e.message.includes(a)),
  );
});

const shapeOf = (s: z.ZodType) => (s as z.ZodObject).shape as Record<string, z.ZodType>;
const credit = shapeOf(TrainConfigSchema.shape.credit.unwrap());

test("the train config's credit fields are the methods' declared parameters, and refuse what the method refuses", () => {
  assert.deepEqual(
    Object.keys(credit).filter((k) => k !== 'method' && k !== 'taskNorm'),
    CREDIT_PARAM_NAMES,
  );
  // Every parameter a method declares is one of CREDIT_PARAMS, and no parameter is declared by no one.
  const read = new Set<string>();
  for (const m of METHOD_NAMES)
    for (const k of Object.keys(shapeOf(METHOD_PARAMS[m]))) {
      assert.ok(CREDIT_PARAM_NAMES.includes(k as never), `${m}.${k}`);
      read.add(k);
    }
  assert.deepEqual([...read].sort(), [...CREDIT_PARAM_NAMES].sort());
  // Probe values: a value is accepted by the train config for method m exactly when m's declaration
  // accepts it (gae's λ ≤ 1, turn-level's λ unbounded; std must be a boolean, …).
  const probes: Record<string, unknown[]> = {
    gamma: [0, 0.5, 1, 1.5, -0.1],
    lambda: [0, 0.95, 1, 1.5, -1],
    omega: [0, 2, -1],
    std: [true, false, 'no'],
    eps: [0, 1e-6, -1],
    crest: [true, false, 1],
    penalty: [0, 2, -1],
    cbar: [0.5, 1, 0, -1],
  };
  for (const m of METHOD_NAMES) {
    const declared = shapeOf(METHOD_PARAMS[m]);
    for (const k of CREDIT_PARAM_NAMES)
      for (const v of probes[k]) {
        const ok = (() => {
          try {
            // clue credit trains on search only (its clue accounting).
            const on = m === 'clue' ? { env: 'search', params: { mode: 'choose' } } : env;
            parseTrainConfig({ env: on, algo: 'grpo', credit: { method: m, [k]: v } });
            return true;
          } catch {
            return false;
          }
        })();
        const want = Object.hasOwn(declared, k) && declared[k].safeParse(v).success;
        assert.equal(ok, want, `credit ${m} ${k}=${JSON.stringify(v)}`);
      }
  }
  assert.throws(
    () => parseTrainConfig({ env, credit: { omega: 1 } }),
    /config\.credit\.omega: got 1; grpo does not read omega; it takes eps, std/,
  );
  assert.throws(
    () => parseTrainConfig({ env, algo: 'ppo', credit: { lambda: 2 } }),
    /config\.credit\.lambda: got 2; gae: expected a number in \[0, 1\]/,
  );
  // The descriptions are the declarations' own, not copies.
  assert.equal(metaOf(credit.gamma).description, CREDIT_PARAMS.gamma.description);
});

test('the defaults each method declares are the ones its estimator applies when a parameter is unset', () => {
  // Two tasks; rewards along the way, so γ, λ, ω, std and ε all matter.
  const batch = [
    traj([0, 0.5, 1], { seed: 1 }),
    traj(
      [
        { obs: 0, reward: 0 },
        { obs: 2, reward: 0 },
      ],
      { seed: 1 },
    ),
    traj(
      [
        { obs: 0, reward: 0.25 },
        { obs: 1, reward: 0 },
        { obs: 3, reward: 1 },
      ],
      { seed: 1 },
    ),
    traj([0, 1], { seed: 2 }),
    traj([0, 0, 0], { seed: 2 }),
  ];
  const values = (t: { turns: readonly unknown[] }, i: number) => 0.1 * (t.turns.length - i);
  // clue reads the search env's clue accounting, which these trajectories lack (test/credit/clue.test.ts).
  for (const m of METHOD_NAMES.filter((x) => x !== 'clue')) {
    const declared = Object.fromEntries(
      Object.entries(shapeOf(METHOD_PARAMS[m])).map(([k, s]) => [k, defaultOf(s)?.value]),
    );
    assert.ok(
      Object.values(declared).every((v) => v !== undefined),
      `${m}: every parameter has a default`,
    );
    const name = m as MethodName;
    // rtpo's c̄ truncates the ratios π_θ/μ of a drifted policy: given some (0.5, 1.25, 2 by turn).
    const options = (p: Record<string, unknown>) => ({
      ...methodOptions(name, p, values),
      ...(m === 'rtpo' ? { ratio: (_: unknown, i: number) => 0.5 + 0.75 * i } : {}),
    });
    const unset = creditBatch(batch, name, options({}));
    const explicit = creditBatch(batch, name, options(declared));
    assert.deepEqual(explicit, unset, m);
    // And a different value does change something (the parameter is really read).
    for (const [k, v] of Object.entries(declared)) {
      const other = typeof v === 'boolean' ? !v : v === 0 ? 0.5 : Number(v) / 2;
      const changed = creditBatch(batch, name, options({ ...declared, [k]: other }));
      assert.notDeepEqual(changed, unset, `${m}.${k}=${other} changes nothing`);
    }
  }
});

test('nonsense combinations are refused naming both fields; their sensible neighbours pass', () => {
  const env = { env: 'frozenlake', params: { map: '4x4' } };
  const refused: [Record<string, unknown>, RegExp][] = [
    [{ groupSize: 1 }, /^config\.groupSize: got 1; credit\.method grpo compares the samples of a task/],
    [{ groupSize: 1, credit: { method: 'rloo' } }, /credit\.method rloo compares/],
    [
      { ppo: { clipLow: 0.2, clipHigh: 0.1 } },
      /^config\.ppo\.clipHigh: got 0\.1; must be ≥ ppo\.clipLow \(0\.2\)/,
    ],
    [
      { groups: 2, groupSize: 4, ppo: { minibatches: 9 } },
      /^config\.ppo\.minibatches: got 9; must be ≤ the batch, groups × groupSize = 2 × 4 = 8/,
    ],
    // Set for a part of training the run never does (each was silently ignored).
    [
      { algo: 'es', credit: { method: 'rloo' } },
      /^config\.credit\.method: got "rloo"; is not read by algo es \(no gradient, no groups\)/,
    ],
    [{ algo: 'es', credit: { gamma: 0.9 } }, /^config\.credit\.gamma: got 0\.9; is not read by algo es/],
    [
      { algo: 'es', guidance: { mode: 'bread' } },
      /^config\.guidance\.mode: got "bread"; is not read by algo es/,
    ],
    [{ algo: 'es', crossPolicy: { q: 0.5 } }, /^config\.crossPolicy\.q: got 0\.5; is not read by algo es/],
    [
      { algo: 'es', dynamicSampling: { enabled: true } },
      /^config\.dynamicSampling\.enabled: got true; is not read by algo es/,
    ],
    [{ algo: 'es', ppo: { clipHigh: 0.3 } }, /^config\.ppo\.clipHigh: got 0\.3; is not read by algo es/],
    [{ algo: 'es', ppo: { klCoef: 0.1 } }, /^config\.ppo\.klCoef: got 0\.1; is not read by algo es/],
    [{ es: { pairs: 8 } }, /^config\.es\.pairs: got 8; is read by algo es only; algo is grpo$/],
    [
      { algo: 'ppo', es: { workers: 2 } },
      /^config\.es\.workers: got 2; is read by algo es only; algo is ppo$/,
    ],
    [
      { critic: { hidden: [8] } },
      /^config\.critic\.hidden: got \[8\]; is read by the critic of credit\.method gae only; credit\.method is grpo$/,
    ],
    [
      { algo: 'es', critic: { lr: 0.1 } },
      /^config\.critic\.lr: got 0\.1; is read by the critic of credit\.method gae only; algo is es$/,
    ],
    [
      { guidance: { expert: 'oracle' } },
      /^config\.guidance\.expert: got "oracle"; is read by guidance\.mode gaussian or bread only; guidance\.mode is none$/,
    ],
    [{ guidance: { maxPrefix: 3 } }, /^config\.guidance\.maxPrefix: got 3; is read by guidance\.mode/],
    [
      { ppo: { aggregationConstant: 100 } },
      /^config\.ppo\.aggregationConstant: got 100; is read by ppo\.aggregation constant-sum only; ppo\.aggregation is turn-mean$/,
    ],
    [
      { crossPolicy: { q: 0, refreshEvery: 5 } },
      /^config\.crossPolicy\.refreshEvery: got 5; is read only when crossPolicy\.q > 0/,
    ],
    [
      { dynamicSampling: { enabled: false, maxRounds: 5 } },
      /^config\.dynamicSampling\.maxRounds: got 5; is read only when dynamicSampling\.enabled is true$/,
    ],
    [
      { groupSize: 1, credit: { method: 'outcome' }, dynamicSampling: { enabled: true } },
      /^config\.dynamicSampling\.enabled: got true; drops every group whose outcomes are all equal, and a group of groupSize 1 always is: give groupSize ≥ 2$/,
    ],
  ];
  for (const [fields, re] of refused) {
    assert.throws(
      () => parseTrainConfig({ env, ...fields }),
      (e: unknown) => e instanceof InputError && re.test(e.message),
      JSON.stringify(fields),
    );
  }
  const fine: Record<string, unknown>[] = [
    { groupSize: 1, credit: { method: 'gae' }, algo: 'ppo' },
    { groupSize: 1, algo: 'es' },
    { ppo: { clipLow: 0.2, clipHigh: 0.2 } },
    { groups: 2, groupSize: 4, ppo: { minibatches: 8 } },
    { groups: 1, groupSize: 2 }, // the default minibatch count is not the user's choice
    // The neighbours of the unread fields: each where it is read, or set to its default.
    { algo: 'es', es: { pairs: 8, workers: 2 }, ppo: { clipHigh: 0.28 } },
    { algo: 'ppo', critic: { hidden: [8], lr: 0.1 } },
    { credit: { method: 'gae' }, critic: { epochs: 2 } },
    { guidance: { mode: 'gaussian', expert: 'oracle', maxPrefix: 3 } },
    { ppo: { aggregation: 'constant-sum', aggregationConstant: 100 } },
    { crossPolicy: { q: 0.5, refreshEvery: 5 } },
    { crossPolicy: { q: 0, refreshEvery: 10 } },
    { dynamicSampling: { enabled: true, maxRounds: 5 } },
    { groupSize: 2, credit: { method: 'outcome' }, dynamicSampling: { enabled: true } },
    { algo: 'es', groupSize: 1, dynamicSampling: { enabled: false } },
    // A batch of one trajectory with the default minibatch count (2): accepted, and so on resume.
    { groups: 1, groupSize: 1, credit: { method: 'outcome' } },
  ];
  for (const fields of fine) {
    assert.doesNotThrow(() => parseTrainConfig({ env, ...fields }), JSON.stringify(fields));
    // A run's saved config.json (every default written out) is accepted again on --resume.
    const saved = JSON.parse(JSON.stringify(parseTrainConfig({ env, ...fields })));
    assert.deepEqual(parseTrainConfig(saved), parseTrainConfig({ env, ...fields }), JSON.stringify(fields));
  }
});
