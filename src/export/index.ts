// Hand-over formats for large-model trainers (docs/architecture.md `export/`): OpenAI fine-tuning JSONL and verl
// Parquet, both from one conversation per trajectory and the per-turn advantages credit/ computed; and a
// text policy's token rows in verl's agent-loop shape (tokens.ts).
export * from './conversation.ts';
export * from './openai.ts';
export * from './tokens.ts';
export * from './verl.ts';
