// `turnwise credit --in FILE --method M` composed: the file's groups indexed and credited in bounded
// memory (credit/file.ts), each group by creditForSpec (credit-fidelity.ts, which resolves `exact` and
// GAE's values=exact against the env registry's oracles), and every refusal of the spec — an env with no
// oracle, a policy whose exact values cannot be had — found in the first pass, before any output.
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import type { ExactValuesOf } from '../credit/fidelity.ts';
import { CreditIndex, creditRows, type IndexedTrajectories } from '../credit/file.ts';
import type { MethodSpec } from '../credit/index.ts';
import { ENV_IDS, envSpec } from '../envs/index.ts';
import { creditForSpec, DEFAULT_VALUE_SOURCE, exactValuesFromSpecs } from './credit-fidelity.ts';

/** Why an env without an exact oracle has no exact advantage, and what runs on it instead. */
export const NO_ORACLE = (env: string) =>
  `an env with an exact oracle, and ${env} has none: the exact advantage A^π = Q^π − V^π needs the env's whole model solved by dynamic programming over a finite state space, and ${env}'s state (a database, an API state, a sandbox) is not one; methods without an oracle run on it with \`credit --in FILE --method M\` (gae with --values zero), and \`compare\` scores its steps by the env's quality proxy`;

/** `exact` and GAE with values=exact need the oracle of every trajectory's env. */
const needsOracle = (spec: MethodSpec): boolean =>
  spec.name === 'exact' || (spec.name === 'gae' && (spec.params.values ?? DEFAULT_VALUE_SOURCE) === 'exact');

const lacksOracle = (t: Trajectory): boolean => ENV_IDS.includes(t.task.env) && !envSpec(t.task).oracle;

/** The refusal of a spec that needs the oracle for a trajectory (of a registered env) that has none. */
function withoutOracle(spec: MethodSpec, t: Trajectory): InputError {
  const field = spec.name === 'exact' ? '--method' : '--values';
  const why = NO_ORACLE(t.task.env).replace(/^an env with an exact oracle, and /, '');
  return new InputError(
    field,
    spec.name === 'exact' ? spec.label : 'exact',
    `needs an exact oracle (trajectory ${t.id}): ${why}`,
  );
}

/** Pass 1 over a file (refusing it, or a spec it cannot serve, before any output; `visit` sees each
 * valid trajectory), and the rows of advantages in file order as a generator of the later passes. */
export function creditOfFile(
  source: IndexedTrajectories,
  spec: MethodSpec,
  visit?: (t: Trajectory) => void,
): { index: CreditIndex; rows: () => Generator<number[]> } {
  let values: ExactValuesOf | undefined;
  const exact = () => {
    values ??= exactValuesFromSpecs(spec.name === 'exact' ? '--method' : '--values');
    return values;
  };
  // The exact values' refusals (a policy that cannot be rebuilt or has no explicit distribution)
  // depend on the env, the policy and the budget only: one trajectory of each is tried in pass 1, so
  // that the refusal comes before any output (and after the file's own).
  const oracle = needsOracle(spec);
  const tried = new Set<string>();
  let noOracle: Trajectory | undefined;
  let refusal: InputError | undefined;
  const probe = (t: Trajectory) => {
    visit?.(t);
    if (!oracle) return;
    if (lacksOracle(t)) {
      noOracle ??= t;
      return;
    }
    const key = `${t.task.env}|${t.policy}|${t.budget}|${t.revealBudget}`;
    if (refusal !== undefined || tried.has(key)) return;
    tried.add(key);
    try {
      exact()(t);
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      refusal = e;
    }
  };
  const { taskNorm: by, ...params } = spec.params;
  const ix = new CreditIndex(source, by, probe);
  if (noOracle !== undefined) throw withoutOracle(spec, noOracle);
  if (refusal !== undefined) throw refusal;
  const method: MethodSpec = { ...spec, params };
  return { index: ix, rows: () => creditRows(ix, (group) => creditForSpec(group, method, exact), by) };
}
