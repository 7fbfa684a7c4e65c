// An MCP client playing one session against `turnwise mcp` (the SDK's own client, as any MCP agent
// would connect): sql task 3 under a budget of 6, the trajectory appended to runs/agent.jsonl.
//
//   npx tsx examples/mcp-session.ts
//
// It prints each call (`> tool {arguments}`), its text result and its structuredContent (without the
// observation, which the text renders); then what the server wrote on stderr. docs/mcp.md shows the output, and replays the
// stored trajectory in process with `--policy replay:FILE`.
import { mkdirSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// `turnwise mcp` with its flags: the same command line an MCP host's server configuration takes
// ("command": "turnwise", "args": ["mcp", …]); here node and this checkout's bin, so that it runs
// whether or not `npm link` put turnwise on the PATH.
const bin = new URL('../bin/turnwise.js', import.meta.url).pathname;
mkdirSync('runs', { recursive: true }); // --store needs its directory
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [bin, 'mcp', '--env', 'sql', '--task-seed', '3', '--budget', '6', '--store', 'runs/agent.jsonl'],
  stderr: 'pipe',
});
let serverLog = '';
transport.stderr?.on('data', (d) => (serverLog += d));
const serverLogEnd = new Promise((resolve) => transport.stderr?.on('end', resolve));
const client = new Client({ name: 'my-agent', version: '1.0.0' });
try {
  await client.connect(transport);
} catch (e) {
  // The server refused its flags (one line on its stderr) or could not start.
  await serverLogEnd;
  process.stderr.write(serverLog || `${e}\n`);
  process.exit(1);
}

const { tools } = await client.listTools();
console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

const select =
  'SELECT title FROM courses WHERE credits > (SELECT AVG(credits) FROM courses) ORDER BY credits DESC, id';
const calls: [string, Record<string, unknown>][] = [
  ['list_tables', {}],
  ['execute_sql', { query: 'DROP TABLE courses' }], // refused: the database is read-only
  ['execute_sql', { query: select }],
  ['submit', { query: select }],
  ['list_tables', {}], // the episode is over: a tool error
];
for (const [name, args] of calls) {
  const result = await client.callTool({ name, arguments: args });
  console.log(`> ${name} ${JSON.stringify(args)}${result.isError ? ' (isError)' : ''}`);
  for (const c of result.content as { type: string; text?: string }[]) console.log(c.text ?? `[${c.type}]`);
  if (result.structuredContent !== undefined) {
    const { observation: _, ...rest } = result.structuredContent as Record<string, unknown>;
    console.log(JSON.stringify(rest));
  }
}
await client.close();
// The server wrote the trajectory when the episode ended; its one stderr line says where.
await serverLogEnd;
process.stdout.write(serverLog);
