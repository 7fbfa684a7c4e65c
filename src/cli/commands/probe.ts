// turnwise probe URL#MODEL: what an OpenAI-compatible server supports, by small real requests whose
// prompt is the env's first turn (so that `turnwise serve` can answer them as a real model would).
import type { Command } from 'commander';
import { envs } from '../../envs/index.ts';
import { buildMessages } from '../../policies/chat.ts';
import { makeOpenAIPolicy } from '../../policies/spec.ts';
import { json, out } from '../io.ts';
import { connectOptions } from '../openai-flags.ts';
import { type EnvFlags, envConfigFromFlags, envOptions } from '../options.ts';
import { ABOUT } from './about.ts';

/** The key's variable of --api-key-env, checked (set, non-empty). */
function keyEnv(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  connectOptions({ apiKeyEnv: name }, { env: '', params: {} });
  return name;
}

export function registerProbe(program: Command): void {
  envOptions(program.command('probe <target>').description(ABOUT.probe.description))
    .option('--env <id>', 'environment id whose first turn is the prompt', 'frozenlake')
    .option('--api-key-env <name>', 'read the API key from this variable (default OPENAI_API_KEY)')
    .option('--json', 'machine-readable output')
    .action(async (target: string, flags: EnvFlags & { env: string; json?: boolean; apiKeyEnv?: string }) => {
      const config = envConfigFromFlags(flags.env, flags);
      const env = await envs.make({ ...config, seed: 0 });
      try {
        const spec = target.startsWith('openai:') ? target : `openai:${target}`;
        const policy = makeOpenAIPolicy(spec, env.spec, 'probe URL#MODEL', keyEnv(flags.apiKeyEnv));
        await policy.connect();
        const chat = env.spec.chat;
        if (chat === undefined || env.text === undefined)
          throw new Error(`env ${env.spec.id} has no chat encoding`);
        const observation = await env.reset(0);
        const messages = buildMessages({
          chat,
          mode: 'text',
          text: env.text.bind(env),
          observation,
          history: [],
          turn: 0,
          turnsLeft: env.spec.maxTurns ?? 100,
        });
        const caps = await policy.probe(messages);
        if (flags.json) return json(caps);
        for (const [k, v] of Object.entries(caps)) out(`${k.padEnd(15)} ${v ? 'yes' : 'no'}`);
      } finally {
        await env.close?.();
      }
    });
}
