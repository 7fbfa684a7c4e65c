// The bench scripts' flags: node:util's parseArgs under the project's rule for bad input. An unknown
// flag, a flag without its value, a value given to a switch or a positional argument is refused with
// one line on stderr naming the flag, what was given and what is allowed (`bench/X.ts: --flag: got …;
// expected …`, the benches' own style), exit code 2; `--help` (`-h`) prints the usage and every option
// with its default, exit 0 — both before the bench does anything. Valid flags get exactly what
// parseArgs returns, so a bench's own later checks and output do not change.
//   const { values } = benchArgs('bench/fog.ts', { options: { seeds: { type: 'string', default: '1,2,3' } } });
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
type Parsed<T extends ParseArgsConfig> = ReturnType<typeof parseArgs<T>>;

/** What benchArgs does with the arguments, without doing it: parseArgs's result, the `--help` text
 * (stdout, exit 0) or the one-line refusal (stderr, exit 2). `config.args` (parseArgs's own field,
 * process.argv by default) lets a test hand it any arguments. */
export function readBenchArgs<T extends ParseArgsConfig>(
  script: string,
  config: T,
): { parsed: Parsed<T> } | { help: string } | { refusal: string } {
  // A bench that defines its own `help` keeps it: then this adds nothing and prints nothing.
  const own = config.options !== undefined && Object.hasOwn(config.options, 'help');
  const shortH = Object.values(config.options ?? {}).some((o) => o.short === 'h');
  const options: Options = own
    ? { ...config.options }
    : { ...config.options, help: { type: 'boolean', ...(shortH ? {} : { short: 'h' }) } };
  let parsed: Parsed<T>;
  try {
    parsed = parseArgs({ ...config, options }) as Parsed<T>;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string' || !code.startsWith('ERR_PARSE_ARGS_')) throw e;
    const why = problem(config, options) ?? (e as Error).message.split('\n')[0];
    return { refusal: `${script}: ${why}` };
  }
  if (!own && (parsed.values as Record<string, unknown>).help === true)
    return { help: usage(script, options) };
  return { parsed };
}

/** parseArgs's result for valid flags; otherwise the refusal or the usage, and exit. */
export function benchArgs<T extends ParseArgsConfig>(script: string, config: T): Parsed<T> {
  const r = readBenchArgs(script, config);
  if ('refusal' in r) {
    process.stderr.write(`${r.refusal}\n`);
    process.exit(2);
  }
  if ('help' in r) {
    process.stdout.write(r.help);
    process.exit(0);
  }
  return r.parsed;
}

/** A flag or value as one line: quotes and control characters escaped as JSON does. */
const esc = (s: string) => JSON.stringify(s).slice(1, -1);

/** The first argument parseArgs refuses and why, found as parseArgs finds it (strict mode's checks on
 * the same tokens, in order), in words that name the flag and what is allowed. */
function problem(config: ParseArgsConfig, options: Options): string | undefined {
  const flags = Object.keys(options).map((n) => `--${n}`);
  const { tokens } = parseArgs({ ...config, options, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'positional' && !config.allowPositionals)
      return `positional argument: got "${esc(t.value)}"; expected none (the options are ${flags.join(', ')})`;
    if (t.kind !== 'option') continue;
    const flag = esc(t.rawName);
    if (!Object.hasOwn(options, t.name))
      return `${flag}: unknown option; expected one of ${flags.join(', ')}`;
    const type = options[t.name]!.type;
    if (type === 'string' && t.value === undefined)
      return `${flag}: missing its value; expected ${flag} <value>`;
    if (type === 'string' && !t.inlineValue && t.value!.length > 1 && t.value!.startsWith('-'))
      return `${flag}: got "${esc(t.value!)}", an option; expected a value (one starting with - is written --${t.name}=VALUE)`;
    if (type === 'boolean' && t.value !== undefined)
      return `${flag}: got "${esc(t.value)}"; expected no value (--${t.name} is a switch)`;
  }
  return undefined;
}

/** `usage: …` and one line per option: its flag, `<value>` when it takes one, its default. */
function usage(script: string, options: Options): string {
  const lines = Object.entries(options).map(([name, o]) => {
    const flag = `--${name}${o.short ? `, -${o.short}` : ''}${o.type === 'string' ? ' <value>' : ''}`;
    const notes = [
      ...(o.multiple ? ['repeatable'] : []),
      ...(o.default !== undefined ? [`default ${[o.default].flat().join(',')}`] : []),
      ...(name === 'help' ? ['this list'] : []),
    ];
    return [flag, notes.join('; ')] as const;
  });
  const width = Math.max(...lines.map(([flag]) => flag.length));
  const body = lines
    .map(([flag, notes]) => `  ${notes ? `${flag.padEnd(width)}  ${notes}` : flag}\n`)
    .join('');
  return `usage: node --import tsx ${script} [options]\n${body}`;
}
