// Credit between two agents (credit/agents.ts) on hand-made groups: each value computed by hand below.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  counterfactualCredit,
  executorGroupCredit,
  type PairEpisode,
  pairCredit,
  plannerGroupCredit,
} from '../../src/credit/agents.ts';

const EPS = 1e-6;
const close = (a: readonly number[], b: readonly number[], tol = 1e-12) => {
  assert.equal(a.length, b.length);
  a.forEach((x, i) => {
    assert.ok(Math.abs(x - b[i]) <= tol, `[${i}] ${x} vs ${b[i]}`);
  });
};

// Four episodes of one map: waypoints 3, 3, 5, 7 with outcomes 1, 0, 1, 0. R̄ = 0.5, std R = 0.5;
// R̄ by waypoint: 3 → 0.5, 5 → 1, 7 → 0.
const group: PairEpisode[] = [
  { choice: 3, outcome: 1 },
  { choice: 3, outcome: 0 },
  { choice: 5, outcome: 1 },
  { choice: 7, outcome: 0 },
];
const unit = 0.5 / (0.5 + EPS);

test('shared: both agents get the GRPO-normalised outcome of the team', () => {
  const a = pairCredit(group, 'shared');
  close(a.planner, [unit, -unit, unit, -unit]);
  close(a.executor, a.planner);
});

test("per-agent: the planner gets its waypoint's mean against the group's, the executor GRPO among its waypoint's episodes", () => {
  // planner: (R̄_w − R̄)/(std + ε) = 0, 0, +0.5/0.5, −0.5/0.5
  close(plannerGroupCredit(group), [0, 0, unit, -unit]);
  // executor: waypoint 3's pair (1, 0) has mean 0.5 and std 0.5; waypoints 5 and 7 are alone: 0
  close(executorGroupCredit(group), [unit, -unit, 0, 0]);
  const a = pairCredit(group, 'per-agent');
  close(a.planner, [0, 0, unit, -unit]);
  close(a.executor, [unit, -unit, 0, 0]);
});

test('per-agent: a dead group (all outcomes equal) gives both agents 0', () => {
  const dead = group.map((e) => ({ ...e, outcome: 1 }));
  const a = pairCredit(dead, 'per-agent');
  close(a.planner, [0, 0, 0, 0]);
  close(a.executor, [0, 0, 0, 0]);
});

// A map with 4 waypoints; π(w|s) = 0.1, 0.2, 0.3, 0.4 and the replays R(w) = 0, 1, 1, 0 under one
// episode's streams: the baseline Σ π R = 0.2 + 0.3 = 0.5.
const probs = [0.1, 0.2, 0.3, 0.4];
const replays = [0, 1, 1, 0];

test('counterfactual: R − Σ_w π(w) R(w) on a hand-made episode', () => {
  assert.equal(counterfactualCredit({ choice: 1, outcome: 1, replays, probs }), 0.5);
  assert.equal(counterfactualCredit({ choice: 3, outcome: 0, replays, probs }), -0.5);
  // unlike GRPO, a group where every sample failed still teaches the planner
  const failed: PairEpisode[] = [
    { choice: 0, outcome: 0, replays, probs },
    { choice: 3, outcome: 0, replays, probs },
  ];
  const a = pairCredit(failed, 'counterfactual');
  close(a.planner, [-0.5, -0.5]);
  close(a.executor, [0, 0]);
  // the executor's credit under counterfactual is the shared one
  const mixed: PairEpisode[] = [
    { choice: 1, outcome: 1, replays, probs },
    { choice: 3, outcome: 0, replays, probs },
  ];
  const m = pairCredit(mixed, 'counterfactual');
  close(m.planner, [0.5, -0.5]);
  close(m.executor, pairCredit(mixed, 'shared').executor);
  close(m.executor, [unit, -unit]);
  close(pairCredit(failed, 'shared').planner, [0, 0]);
});

test("counterfactual: the planner's advantage has expectation 0 under its own policy (the baseline is unbiased)", () => {
  let expected = 0;
  for (let w = 0; w < 4; w++)
    expected += probs[w] * counterfactualCredit({ choice: w, outcome: replays[w], replays, probs });
  assert.ok(Math.abs(expected) < 1e-15, `${expected}`);
});

test('counterfactual: a replay of the chosen waypoint that is not the outcome is refused', () => {
  assert.throws(
    () => counterfactualCredit({ choice: 1, outcome: 0, replays, probs }),
    /not the same streams/,
  );
  assert.throws(() => counterfactualCredit({ choice: 1, outcome: 1 }), /needs the replays/);
});
