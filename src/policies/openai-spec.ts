// `openai:URL#MODEL[,options]` read into the options of a client of that endpoint: the URL (or
// `openai:env#MODEL`, the URL from OPENAI_BASE_URL), the model and each option with its reader, one
// declaration each. The `openai:` policy (spec.ts makeOpenAIPolicy) and the rubric's judges
// (rewards/judge.ts) read their specs here; this file loads no policy, so a command that only judges
// does not load the policies' engines.
import { InputError } from '../core/errors.ts';
import type { OpenAIOptions } from './openai.ts';
import { flag } from './spec-values.ts';

const OPENAI_FORM =
  'expected openai:URL#MODEL[,mode=tools|text,temperature=,max_tokens=,history=all|N,concurrency=,timeout=,retries=,logprobs=1|0,top_logprobs=,budgetAware=1|0,rpm=,tpm=,max_context=,token_ids=1|0] or openai:env#MODEL';

/** A duration with its unit, such as 30s or 500ms: a bare number is refused, since 30 could be either. */
const duration = (v: string, field: string): number => {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(v.trim());
  const ms = m === null ? Number.NaN : Number(m[1]) * (m[2] === 's' ? 1000 : 1);
  if (!(ms > 0 && ms <= 3_600_000))
    throw new InputError(
      field,
      v,
      'expected a duration with its unit, ms or s (such as 30s or 500ms), over 0 and at most 3600s',
    );
  return ms;
};
const intIn = (lo: number, hi: number) => (v: string, field: string) => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || x < lo || x > hi)
    throw new InputError(field, v, `expected an integer from ${lo} to ${hi}`);
  return x;
};

/** `openai:URL#MODEL[,options]`: the options one by one, with their readers (one declaration each). */
const OPENAI_PARAMS: Record<string, (v: string, field: string, o: OpenAIOptions) => void> = {
  mode: (v, f, o) => {
    if (v !== 'tools' && v !== 'text') throw new InputError(f, v, 'expected tools or text');
    o.mode = v;
  },
  temperature: (v, f, o) => {
    const x = Number(v);
    if (v.trim() === '' || !(x >= 0 && x <= 2)) throw new InputError(f, v, 'expected a number in [0, 2]');
    o.temperature = x;
  },
  max_tokens: (v, f, o) => {
    o.maxTokens = intIn(1, 1_000_000)(v, f);
  },
  history: (v, f, o) => {
    o.history = v === 'all' ? undefined : intIn(0, 1_000_000)(v, f);
  },
  concurrency: (v, f, o) => {
    o.concurrency = intIn(1, 4096)(v, f);
  },
  timeout: (v, f, o) => {
    o.timeoutMs = duration(v, f);
  },
  retries: (v, f, o) => {
    o.retries = intIn(0, 100)(v, f);
  },
  backoff: (v, f, o) => {
    o.backoffMs = duration(v, f);
  },
  logprobs: (v, f, o) => {
    o.logprobs = flag(v, f) === 1;
  },
  top_logprobs: (v, f, o) => {
    o.topLogprobs = intIn(0, 20)(v, f);
  },
  budgetAware: (v, f, o) => {
    o.budgetAware = flag(v, f) === 1;
  },
  rpm: (v, f, o) => {
    o.rpm = intIn(1, 10_000_000)(v, f);
  },
  tpm: (v, f, o) => {
    o.tpm = intIn(1, 1_000_000_000)(v, f);
  },
  token_ids: (v, f, o) => {
    o.tokenIds = flag(v, f) === 1;
  },
  max_context: (v, f, o) => {
    o.maxContext = intIn(1, 100_000_000)(v, f);
  },
};
/** How one use reads a spec: a hook between the URL and the options (makeOpenAIPolicy checks its env
 * there), the options it takes (all of them when absent), and its defaults over the policy's. */
export interface SpecReading {
  check?: () => void;
  allowed?: readonly string[];
  defaults?: Partial<OpenAIOptions>;
}

/** The options of `spec`, or an InputError naming `field` (the URL as `${field} openai URL`, an option
 * as `${field} openai.KEY`). */
export function readOpenAISpec(spec: string, field: string, how: SpecReading = {}): OpenAIOptions {
  const rest = spec.slice('openai:'.length);
  const hash = rest.indexOf('#');
  if (!spec.startsWith('openai:') || hash < 0) throw new InputError(field, spec, OPENAI_FORM);
  let url = rest.slice(0, hash).trim();
  const [model, ...parts] = rest.slice(hash + 1).split(',');
  if (model.trim() === '') throw new InputError(field, spec, `${OPENAI_FORM}: the model is missing`);
  if (url === 'env') {
    url = process.env.OPENAI_BASE_URL ?? '';
    if (url === '')
      throw new InputError(
        field,
        spec,
        'openai:env#MODEL takes the URL from OPENAI_BASE_URL, which is not set',
      );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InputError(
      `${field} openai URL`,
      url,
      'expected an http(s) URL such as http://127.0.0.1:8000/v1',
    );
  }
  if (
    (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') ||
    parsed.username !== '' ||
    parsed.password !== ''
  ) {
    throw new InputError(
      `${field} openai URL`,
      url,
      'expected an http(s) URL without credentials (the key comes from OPENAI_API_KEY)',
    );
  }
  how.check?.();
  const options: OpenAIOptions = {
    baseUrl: url.replace(/\/+$/, ''),
    model: model.trim(),
    mode: 'tools',
    maxTokens: 256,
    concurrency: 8,
    timeoutMs: 60_000,
    retries: 5,
    backoffMs: 250,
    maxBackoffMs: 8_000,
    logprobs: true,
    topLogprobs: 0,
    ...how.defaults,
  };
  const allowed = how.allowed ?? Object.keys(OPENAI_PARAMS);
  const seen = new Set<string>();
  for (const part of parts) {
    const eq = part.indexOf('=');
    const key = eq < 0 ? part.trim() : part.slice(0, eq).trim();
    const read = Object.hasOwn(OPENAI_PARAMS, key) && allowed.includes(key) ? OPENAI_PARAMS[key] : undefined;
    if (eq <= 0 || read === undefined) {
      throw new InputError(field, spec, `openai takes ${allowed.join(', ')} (key=value)`);
    }
    if (seen.has(key)) throw new InputError(field, spec, `parameter ${key} is given twice`);
    seen.add(key);
    read(part.slice(eq + 1).trim(), `${field} openai.${key}`, options);
  }
  return options;
}
