// Hand-over formats for large-model trainers (docs/architecture.md `export/`): OpenAI fine-tuning JSONL and verl
// Parquet, both from one conversation per trajectory and the per-turn advantages credit/ computed.
export * from './conversation.ts';
export * from './openai.ts';
export * from './verl.ts';
