// No agent outlives its harness: `turnwise harness run` killed with kill -9 while its agents (and their
// MCP servers) hang leaves nothing running — the run's watchdog stops them — and the resume still runs
// each episode exactly once; SIGTERM stops them from the harness itself and records nothing half-done;
// the pid file's sweep stops what survived both, and never a process whose pid was reused.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { makeTasks } from '../../src/core/tasks.ts';
import { groupExists, PID_FILE, procStart, readPidFile, sweepGroups } from '../../src/harness/groups.ts';
import { runHarness } from '../../src/harness/run.ts';
import { startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';

const AGENT = resolve('test/fixtures/agent.py');
const BIN = resolve('bin/turnwise.js');
const root = mkdtempSync(join(tmpdir(), 'turnwise-groups-'));
let up: Upstream;
before(async () => {
  up = await startUpstream();
});
after(async () => {
  await up.close();
});

/** Gone: no such process, or a zombie (dead; only its exit status is left for a parent to reap). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] === 'Z';
  } catch {
    return true;
  }
}

/** Polls `cond` every 25 ms until it holds; fails after `ms`. */
async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) assert.fail(`not within ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The pids of the watchdogs guarding run directory `out` (its pid file is on their command line). */
const watchdogs = (out: string): number[] =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
        return argv.includes('-e') && argv.includes(join(out, PID_FILE)) && !gone(Number(d));
      } catch {
        return false;
      }
    })
    .map(Number);

const rows = (out: string): number => {
  try {
    const db = new Database(join(out, 'run.sqlite'), { readonly: true, fileMustExist: true });
    const n = (db.prepare('SELECT COUNT(*) AS n FROM trajectories').get() as { n: number }).n;
    db.close();
    return n;
  } catch {
    return 0;
  }
};

interface Ready {
  agent: number;
  mcp: number | null;
}
const readyOf = (dir: string): Ready[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Ready);

function harness(out: string, env: Record<string, string>, tasks: number, samples: number): ChildProcess {
  const args = [
    BIN,
    'harness',
    'run',
    '--cmd',
    `AGENT_CALLS=2 python3 ${AGENT}`,
    '--env',
    'frozenlake',
    '--tasks',
    String(tasks),
    '--samples',
    String(samples),
    '--budget',
    '4',
    '--upstream',
    up.url,
    '--out',
    out,
    '--concurrency',
    '2',
    '--timeout',
    '300',
    '--json',
  ];
  return spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
}

const collect = (child: ChildProcess) => {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.on('exit', (code, signal) => r({ code, signal })),
  );
  return { exit, out: () => stdout, err: () => stderr };
};

test('kill -9 of the harness: the watchdog stops the hung agents and their MCP servers; the resume runs each episode once', async () => {
  const out = join(root, 'killed');
  const ready = join(root, 'ready-killed');
  mkdirSync(ready);
  // Sample 1 of each task hangs (after one call, its MCP server started) and ignores SIGTERM, so only
  // the watchdog's SIGKILL after the grace period stops it; sample 0 finishes.
  const child = harness(
    out,
    { AGENT_MODE: 'hang', AGENT_HANG_SAMPLE: '1', AGENT_IGNORE_TERM: '1', AGENT_READY_DIR: ready },
    2,
    2,
  );
  const first = collect(child);
  await until(() => readyOf(ready).length === 2 && rows(out) === 2, 90_000, 'two agents hanging, two done');
  const hung = readyOf(ready);
  const groups = readPidFile(join(out, PID_FILE));
  assert.deepEqual(groups.map((g) => g.session).sort(), ['e1-a0', 'e3-a0']);
  assert.ok(
    hung.every((h) => h.mcp !== null),
    'each hung agent started its MCP server',
  );
  const wd = watchdogs(out);
  assert.equal(wd.length, 1, 'one watchdog per run');
  const pids = [...hung.flatMap((h) => [h.agent, h.mcp as number]), ...groups.map((g) => g.pid), ...wd];
  assert.ok(
    pids.every((p) => !gone(p)),
    'all running before the kill',
  );
  // Each agent is in a group of its own, led by its shell, with its MCP server in it.
  const pgrp = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  };
  for (const h of hung) {
    assert.ok(groups.some((g) => g.pid === pgrp(h.agent)));
    assert.equal(pgrp(h.mcp as number), pgrp(h.agent));
    assert.notEqual(pgrp(h.agent), pgrp(child.pid as number));
  }
  child.kill('SIGKILL');
  assert.equal((await first.exit).signal, 'SIGKILL');
  // SIGTERM is ignored by the agents, so this takes the grace period (2 s) and the SIGKILL.
  await until(() => pids.every(gone), 30_000, `agents ${pids.join(', ')} stopped`);

  // The resume: the finished episodes are not run again, the interrupted ones in a second session.
  const second = collect(harness(out, { AGENT_MODE: 'chat' }, 2, 2));
  assert.deepEqual(await second.exit, { code: 0, signal: null }, second.err());
  const result = JSON.parse(second.out());
  assert.deepEqual([result.resumed, result.ran, result.episodes], [2, 2, 4]);
  assert.doesNotMatch(second.err(), /stopped \d+ agent/, 'the watchdog left nothing for the sweep');
  const lines = readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((t) => t.id),
    ['harness-0-0', 'harness-0-1', 'harness-1-0', 'harness-1-1'],
  );
  assert.ok(lines.every((t) => t.turns.length === 2 && t.outcome.end === 'terminated'));
  const db = new Database(join(out, 'proxy.sqlite'), { readonly: true });
  const sessions = (db.prepare('SELECT id FROM sessions ORDER BY id').all() as { id: string }[]).map(
    (r) => r.id,
  );
  db.close();
  assert.deepEqual(sessions, ['e0-a0', 'e1-a0', 'e1-a1', 'e2-a0', 'e3-a0', 'e3-a1']);
  assert.deepEqual(readPidFile(join(out, PID_FILE)), []);
  // The watchdog exits when it reads the end of its pipe, a moment after the harness: waited for.
  await until(() => watchdogs(out).length === 0, 10_000, 'the resumed run let its watchdog go');
});

test('SIGTERM to the harness: it stops its agents itself, records nothing half-done, and ends by SIGTERM', async () => {
  const out = join(root, 'term');
  const ready = join(root, 'ready-term');
  mkdirSync(ready);
  const child = harness(out, { AGENT_MODE: 'hang', AGENT_READY_DIR: ready }, 1, 2);
  const run = collect(child);
  await until(() => readyOf(ready).length === 2, 90_000, 'two agents hanging');
  const pids = [...readyOf(ready).flatMap((h) => [h.agent, h.mcp as number]), ...watchdogs(out)];
  assert.equal(pids.length, 5);
  child.kill('SIGTERM');
  assert.deepEqual(await run.exit, { code: null, signal: 'SIGTERM' });
  assert.match(run.err(), /interrupted by SIGTERM: 0 of 2 episodes recorded; run the same command to resume/);
  assert.equal(run.out(), '');
  // The harness waited for its agents' shells; what they left (an MCP server) was killed with the group.
  await until(() => pids.every(gone), 10_000, `agents ${pids.join(', ')} stopped`);
  assert.equal(rows(out), 0);
  assert.deepEqual(readPidFile(join(out, PID_FILE)), []);
});

test('kill -9 of the harness and its watchdog: the agents survive as orphans until the resume sweeps them', async () => {
  const out = join(root, 'both-killed');
  const ready = join(root, 'ready-both');
  mkdirSync(ready);
  const child = harness(out, { AGENT_MODE: 'hang', AGENT_IGNORE_TERM: '1', AGENT_READY_DIR: ready }, 1, 2);
  const first = collect(child);
  await until(() => readyOf(ready).length === 2, 90_000, 'two agents hanging');
  const pids = readyOf(ready).flatMap((h) => [h.agent, h.mcp as number]);
  const [wd] = watchdogs(out);
  process.kill(wd, 'SIGKILL');
  await until(() => gone(wd), 5000, 'the watchdog killed');
  child.kill('SIGKILL');
  await first.exit;
  // Nobody is left to stop them: what the pid file is for (the sweep's count below says they were
  // still running when the resume started).
  assert.ok(
    pids.every((p) => !gone(p)),
    'orphans after both died',
  );
  const second = collect(harness(out, { AGENT_MODE: 'chat' }, 1, 2));
  assert.deepEqual(await second.exit, { code: 0, signal: null }, second.err());
  assert.match(second.err(), /stopped 2 agent\(s\) a killed harness had left running/);
  assert.ok(pids.every(gone), 'swept before the resumed run started its own');
  const result = JSON.parse(second.out());
  assert.deepEqual([result.resumed, result.ran, result.episodes], [0, 2, 2]);
});

/** A process group of its own (`sleep`), as an agent's would be. */
function sleeper(): number {
  const c = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
  c.unref();
  return c.pid as number;
}

test('the sweep on resume stops a group a dead harness left, and not a process whose pid was reused', async () => {
  const out = join(root, 'swept');
  mkdirSync(out);
  const left = sleeper();
  const stranger = sleeper();
  await until(() => procStart(left) !== undefined && procStart(stranger) !== undefined, 5000, 'sleepers');
  // The stranger has the pid of an entry but another start time: the pid was reused.
  writeFileSync(
    join(out, PID_FILE),
    `${JSON.stringify({ pid: left, start: procStart(left), session: 'e0-a0' })}\n${JSON.stringify({
      pid: stranger,
      start: (procStart(stranger) as number) - 1,
      session: 'e1-a0',
    })}\nhalf a li`,
  );
  try {
    const r = await runHarness({
      cmd: `AGENT_CALLS=1 python3 ${AGENT}`,
      tasks: makeTasks({ env: 'custom', params: {} }, 1, 0),
      samples: 1,
      budget: 3,
      revealBudget: false,
      upstream: up.url,
      out,
      concurrency: 1,
      timeoutMs: 30_000,
      config: { name: 'swept' },
    });
    assert.deepEqual(r.swept, [left]);
    assert.equal(r.trajectories.length, 1);
    await until(() => gone(left), 5000, 'the left-over group stopped');
    assert.ok(!gone(stranger), 'the stranger lives');
    assert.deepEqual(await sweepGroups(join(out, PID_FILE), 100), [], 'the pid file is empty after the run');
  } finally {
    for (const p of [left, stranger]) {
      try {
        process.kill(-p, 'SIGKILL');
      } catch {}
    }
  }
});

/** A process group whose only member is a zombie: its leader has exited and its parent never reaps
 * it (an `exec sleep`), as an orphaned agent is until init reaps it — which can take seconds. */
async function zombieGroup(): Promise<{ zombie: number; reaper: number }> {
  // The inner shell leads a group of its own (setsid), prints its pid and waits for fd 3 to close; the
  // outer one becomes `sleep`, which never waits for children.
  const outer = spawn('sh', ['-c', `setsid sh -c 'echo $$; read x <&3' & exec sleep 300`], {
    stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
    detached: true,
  });
  outer.unref();
  const run = collect(outer);
  const reaper = outer.pid as number;
  await until(() => run.out().endsWith('\n'), 10_000, 'the inner shell started');
  const zombie = Number(run.out().trim());
  const comm = () => readFileSync(`/proc/${reaper}/comm`, 'utf8').trim();
  await until(() => comm() === 'sleep', 10_000, 'the outer shell is sleep');
  (outer.stdio[3] as NodeJS.WritableStream).end();
  await until(() => gone(zombie), 10_000, 'the inner shell exited');
  return { zombie, reaper };
}

test('a group of zombies has ended: not swept, not "running", though kill(-pgid, 0) still reaches it', async () => {
  const { zombie, reaper } = await zombieGroup();
  try {
    const stat = readFileSync(`/proc/${zombie}/stat`, 'utf8');
    assert.equal(stat[stat.lastIndexOf(')') + 2], 'Z', 'a zombie, not reaped');
    assert.doesNotThrow(() => process.kill(-zombie, 0), 'the kernel still knows its group');
    assert.equal(groupExists(zombie), false);
    const file = join(root, 'zombie.pids');
    writeFileSync(file, `${JSON.stringify({ pid: zombie, start: procStart(zombie), session: 'e0-a0' })}\n`);
    assert.deepEqual(await sweepGroups(file, 100), [], 'nothing left running to stop');
  } finally {
    process.kill(-reaper, 'SIGKILL');
  }
});

test('the watchdog: stops the groups it was told of when its holder dies by SIGKILL, not the released ones, then exits', async () => {
  const file = join(root, 'wd.pids');
  const watched = sleeper();
  const released = sleeper();
  // A holder process: tells its watchdog of both groups, releases one, prints the watchdog's pid, waits.
  const code = `
    import { AgentGroups } from ${JSON.stringify(resolve('src/harness/groups.ts'))};
    const g = new AgentGroups(${JSON.stringify(file)}, 200);
    g.add(${watched}, 'a');
    g.add(${released}, 'b');
    g.release(${released}, 'SIGCONT');
    process.stdout.write(String(g.watchdogPid) + '\\n');
    setInterval(() => {}, 1 << 30);
  `;
  const holder = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const run = collect(holder);
  await until(() => run.out().endsWith('\n'), 30_000, 'the holder started its watchdog');
  const wd = Number(run.out().trim());
  assert.ok(wd > 1 && !gone(wd));
  assert.deepEqual(
    readPidFile(file).map((e) => [e.pid, e.start, e.session]),
    [[watched, procStart(watched), 'a']],
  );
  holder.kill('SIGKILL');
  await run.exit;
  try {
    await until(() => gone(watched), 5000, 'the watched group stopped by the watchdog');
    await until(() => gone(wd), 5000, 'the watchdog exited');
    assert.ok(!gone(released), 'a released group is not the watchdog’s');
  } finally {
    for (const p of [watched, released]) {
      try {
        process.kill(-p, 'SIGKILL');
      } catch {}
    }
  }
});
