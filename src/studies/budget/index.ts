// The budget study (issue 7): `turnwise study budget`, `npm start`.
export * from './config.ts';
export * from './findings.ts';
export * from './measure.ts';
export * from './memo.ts';
export * from './pipeline.ts';
export * from './report.ts';
export * from './run.ts';
export * from './setup.ts';
export * from './study.ts';
export * from './summary.ts';
export * from './terminal.ts';
export * from './trainer.ts';
export * from './world.ts';
