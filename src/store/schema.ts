// The trajectory JSONL format of DESIGN.md as a zod schema: what we read back is validated at the edge.
import { z } from 'zod';
import { FAILURE_KINDS, type FailureKind, type Trajectory } from '../core/types.ts';

const FailureKindSchema = z.enum(FAILURE_KINDS as [FailureKind, ...FailureKind[]]);

export const TaskSchema = z.object({
  env: z.string().min(1),
  params: z.record(z.string(), z.unknown()),
  seed: z.number().int(),
});

const StepInfoSchema = z
  .object({
    success: z.boolean().optional(),
    failure: FailureKindSchema.optional(),
    valid: z.boolean().optional(),
  })
  .loose();

export const TurnSchema = z.object({
  t: z.number().int().min(0),
  observation: z.unknown(),
  action: z.unknown(),
  reward: z.number(),
  // JSON has no −∞: a zero-probability action's logp is written as null.
  logp: z
    .number()
    .nullable()
    .transform((x) => x ?? Number.NEGATIVE_INFINITY),
  info: StepInfoSchema,
  forced: z.boolean().optional(),
});

export const OutcomeSchema = z.object({
  success: z.boolean(),
  return: z.number(),
  turns: z.number().int().min(0),
  firstSuccessTurn: z.number().int().min(1).nullable(),
  end: z.enum(['terminated', 'truncated', 'error']),
  failure: FailureKindSchema.nullable(),
  error: z.string().optional(),
});

export const TrajectorySchema = z
  .object({
    id: z.string(),
    task: TaskSchema,
    policy: z.string(),
    budget: z.number().int().min(1),
    revealBudget: z.boolean(),
    turns: z.array(TurnSchema),
    outcome: OutcomeSchema,
  })
  .superRefine((t, ctx) => {
    if (t.turns.length !== t.outcome.turns) {
      ctx.addIssue({
        code: 'custom',
        path: ['outcome', 'turns'],
        message: `turns has ${t.turns.length} entries`,
      });
    }
    if (t.turns.length > t.budget) {
      ctx.addIssue({ code: 'custom', path: ['turns'], message: `more turns than the budget ${t.budget}` });
    }
  });

/** Parses one trajectory (already JSON-decoded); the result is a core Trajectory. */
export type TrajectoryJson = z.input<typeof TrajectorySchema>;
export const asTrajectory = (x: z.output<typeof TrajectorySchema>): Trajectory => x as Trajectory;
