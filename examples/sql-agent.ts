// A small TypeScript agent for `turnwise harness run`: the openai SDK for the model (at
// $OPENAI_BASE_URL, the recording proxy's session URL) and the task's tools over MCP ($TURNWISE_MCP,
// `turnwise mcp`, the env's own tools and verifier). It knows nothing of turnwise beyond those
// environment variables: any OpenAI-compatible model that calls tools can drive it — here, with no
// weights to download, a scripted sql policy served by `turnwise serve` (its tasks: the harness's).
//
//   turnwise serve --policy oracle:eps=0.2 --env sql --tasks 20 --budget 8 --port 8000 &
//   turnwise harness run --cmd "npx tsx examples/sql-agent.ts" --env sql --tasks 20 --samples 4 \
//     --budget 8 --upstream http://127.0.0.1:8000/v1 --out runs/h1
//
// The model sees the task's first observation (MCP observe's text, verbatim) and the env's tools; each
// tool call goes to the MCP server, whose answer goes back, verbatim, as the tool message. The episode ends when the env says so (its
// structuredContent.done), when the model stops calling tools, or when the proxy refuses a call past
// the budget (turn_budget_exhausted) — the harness records that as `budget`.
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import OpenAI from 'openai';

const mcpCommand = process.env.TURNWISE_MCP;
if (mcpCommand === undefined)
  throw new Error('run me under `turnwise harness run` (TURNWISE_MCP is not set)');

const mcp = new Client({ name: 'sql-agent', version: '0.1.0' });
await mcp.connect(
  new StdioClientTransport({ command: '/bin/sh', args: ['-c', mcpCommand], stderr: 'inherit' }),
);
const openai = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
// The model: $AGENT_MODEL, else the first one the server lists.
const model = process.env.AGENT_MODEL ?? (await openai.models.list()).data[0]?.id;
if (model === undefined) throw new Error('the server lists no model; set AGENT_MODEL');
// A request seed per (task, sample, call), so that a rerun asks the very same questions: servers that
// honour `seed` (vLLM, `turnwise serve`) then answer the same. Hashed to 53 bits: `turnwise serve` takes
// the seed as the policy's uniform draw (seed · 2^-53), so counting 0, 1, 2 would always draw ≈ 0.
const task = process.env.TURNWISE_TASK ?? '';
const sample = process.env.TURNWISE_SAMPLE ?? '0';
const seedOf = (call: number) =>
  Number(
    BigInt(`0x${createHash('sha256').update(`${task}|${sample}|${call}`).digest('hex').slice(0, 14)}`) >> 3n,
  );

const listed = await mcp.listTools();
const tools: OpenAI.ChatCompletionTool[] = listed.tools
  .filter((t) => t.name !== 'observe')
  .map((t) => ({
    type: 'function',
    function: {
      name: t.name,
      description: t.description ?? '',
      parameters: t.inputSchema as Record<string, unknown>,
    },
  }));
const text = (r: Awaited<ReturnType<typeof mcp.callTool>>) =>
  (r.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('\n');

const first = await mcp.callTool({ name: 'observe', arguments: {} });
const messages: OpenAI.ChatCompletionMessageParam[] = [
  {
    role: 'system',
    content:
      'You answer questions about a SQLite database by calling the tools. Inspect the schema, run queries, then submit the answer with the answering tool.',
  },
  { role: 'user', content: text(first) },
];

try {
  for (let call = 0; ; call++) {
    const r = await openai.chat.completions.create({ model, messages, tools, seed: seedOf(call) });
    const message = r.choices[0].message;
    messages.push(message);
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) break; // the model gave up or answered in prose
    let done = false;
    for (const call of calls) {
      if (call.type !== 'function') continue;
      let args: Record<string, unknown> = {};
      try {
        args = JSON.parse(call.function.arguments || '{}');
      } catch {
        // Malformed arguments: the env answers them as an invalid action.
      }
      const result = await mcp.callTool({ name: call.function.name, arguments: args });
      messages.push({ role: 'tool', tool_call_id: call.id, content: text(result) });
      done ||= (result.structuredContent as { done?: boolean } | undefined)?.done === true;
    }
    if (done) break;
  }
} catch (e) {
  // The proxy refused a call past the budget: stop; the harness records the truncation.
  if (!(e instanceof OpenAI.APIError && e.type === 'turn_budget_exhausted')) throw e;
} finally {
  await mcp.close(); // the MCP server appends the env's verdict to the run when its client leaves
}
