// The budget study (issue 7): `turnwise study budget`, `npm start`.
export * from './config.ts';
export type {
  AcrossSeedsFigure,
  Estimate,
  Interval,
  LikelihoodValue,
  PassGrid,
  RecoveryFigure,
  StepQualityDetail,
  StepQualityFigure,
  StepQualitySubset,
  TrendFigure,
} from './figures.ts';
export { finiteOrNull, IntervalSchema, intervalOf, PassGridSchema } from './figures.ts';
export * from './findings.ts';
export * from './measure/curves.ts';
export * from './measure/episodes.ts';
export * from './measure/exact-pass.ts';
export * from './measure/likelihood.ts';
export * from './measure/pass.ts';
export * from './measure/recovery.ts';
export * from './measure/reference.ts';
export * from './measure/states.ts';
export * from './measure/step-quality.ts';
export * from './measure/temperature.ts';
export * from './memo.ts';
export * from './memory-env.ts';
export * from './pipeline.ts';
export * from './report/page.ts';
export * from './report/run.ts';
export * from './run.ts';
export * from './setup.ts';
export * from './study.ts';
export * from './summary.ts';
export * from './terminal.ts';
export * from './trainer.ts';
export * from './world.ts';
