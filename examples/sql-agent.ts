// A small TypeScript agent for `turnwise harness run`: the openai SDK for the model (at
// $OPENAI_BASE_URL, the recording proxy's session URL) and the task's tools over MCP ($TURNWISE_MCP,
// `turnwise mcp`, the env's own tools and verifier). It knows nothing of turnwise beyond those
// environment variables: any OpenAI-compatible model that calls tools can drive it.
//
//   turnwise harness run --cmd "npx tsx examples/sql-agent.ts" --env sql --tasks 20 --samples 4 \
//     --budget 8 --upstream http://127.0.0.1:8000/v1 --out runs/h1
//
// The model sees the task's first observation and the env's tools; each tool call goes to the MCP
// server, whose answer goes back as the tool message. The episode ends when the env says so (its
// structuredContent.done), when the model stops calling tools, or when the proxy refuses a call past
// the budget (turn_budget_exhausted) — the harness records that as `budget`.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import OpenAI from 'openai';

const model = process.env.AGENT_MODEL ?? 'default';
const mcpCommand = process.env.TURNWISE_MCP;
if (mcpCommand === undefined)
  throw new Error('run me under `turnwise harness run` (TURNWISE_MCP is not set)');

const mcp = new Client({ name: 'sql-agent', version: '0.1.0' });
await mcp.connect(
  new StdioClientTransport({ command: '/bin/sh', args: ['-c', mcpCommand], stderr: 'inherit' }),
);
const openai = new OpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment

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
  for (;;) {
    const r = await openai.chat.completions.create({ model, messages, tools });
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
