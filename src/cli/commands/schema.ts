// turnwise schema [NAME] — the JSON Schemas (draft 2020-12) of the files turnwise reads and writes, from
// the zod schemas that validate them, so that harnesses in other languages can write trajectories (and
// configs) turnwise accepts. Without a name: the list.
import type { Command } from 'commander';
import { z } from 'zod';
import { InputError } from '../../core/errors.ts';
import { RubricSchema } from '../../rewards/rubric.ts';
import { TrajectorySchema } from '../../store/schema.ts';
import { StudyConfigSchema } from '../../studies/budget/config.ts';
import { SummarySchema } from '../../studies/budget/summary.ts';
import { TrainConfigSchema } from '../../train/config.ts';
import { json, out, table } from '../io.ts';

interface Entry {
  schema: z.ZodType;
  summary: string;
}

const SCHEMAS: Record<string, Entry> = {
  trajectory: {
    schema: TrajectorySchema,
    summary: 'one line of a trajectory JSONL file (rollout --out, summary --in, credit --in)',
  },
  'train-config': { schema: TrainConfigSchema, summary: 'a training config (train --config run.json)' },
  'study-config': { schema: StudyConfigSchema, summary: 'a budget-study config (the fields of a --profile)' },
  'study-summary': { schema: SummarySchema, summary: "a budget study's summary.json (report RUN reads it)" },
  rubric: {
    schema: RubricSchema,
    summary: 'a rubric: weighted criteria and judges (eval --reward rubric:FILE)',
  },
};

export const SCHEMA_NAMES: readonly string[] = Object.keys(SCHEMAS);

/** The JSON Schema of a named schema: what a file may hold as written (zod's input side). */
export function jsonSchemaOf(name: string): Record<string, unknown> {
  const entry = Object.hasOwn(SCHEMAS, name) ? SCHEMAS[name] : undefined;
  if (entry === undefined)
    throw new InputError('schema', name, `expected one of: ${SCHEMA_NAMES.join(', ')}`);
  const schema = z.toJSONSchema(entry.schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  return { ...schema, title: `turnwise ${name}`, description: entry.summary };
}

export function registerSchema(program: Command): void {
  program
    .command('schema [name]')
    .description(
      `the JSON Schema of a file turnwise reads or writes (${SCHEMA_NAMES.join(', ')}); no name: the list`,
    )
    .option('--json', 'machine-readable list (a schema itself is always JSON)')
    .action((name: string | undefined, flags: { json?: boolean }) => {
      if (name !== undefined) {
        out(JSON.stringify(jsonSchemaOf(name), null, 2));
        return;
      }
      if (flags.json) return json(Object.entries(SCHEMAS).map(([n, e]) => ({ name: n, summary: e.summary })));
      out(table([['schema', 'describes'], ...Object.entries(SCHEMAS).map(([n, e]) => [n, e.summary])]));
      out('\nturnwise schema NAME prints one as JSON Schema (draft 2020-12).');
    });
}
