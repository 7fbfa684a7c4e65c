// Hand-over formats for large-model trainers (docs/architecture.md `export/`): OpenAI fine-tuning JSONL,
// verl's RL and multi-turn SFT datasets (verl.ts) and turnwise's own Parquet of credited trajectories
// (turnwise-parquet.ts), all from one conversation per trajectory; and a text policy's token rows in
// verl's agent-loop shape (tokens.ts). Parquet columns are typed (parquet.ts): lists and structs.
export * from './conversation.ts';
export * from './openai.ts';
export * from './parquet.ts';
export * from './preference.ts';
export * from './tokens.ts';
export * from './turnwise-parquet.ts';
export * from './verl.ts';
