#!/usr/bin/env bash
# The language agent's figures (issue 22): a small transformer cloned from the env's expert, then
# trained by token-level GRPO, scored on held-out tasks against the exact optimum (FrozenLake) and
# against its own base with a paired interval (`compare`, Pass@1 at the training budget).
#   bash bench/language-agent.sh frozenlake|sql [DIR]
# One JSON object on stdout: each phase's figures, wall and CPU seconds. Progress on stderr. See
# bench/README.md ("The language agent") for the figures of the project's machine. Smaller runs (to
# check the plumbing): TRAIN=0:20 TEST=1000000:1000005 EPOCHS=1 ITERS=1 TASKS=5 (sql: also MORE=20:40
# MORE_EPOCHS=1 for its second cloning stage, or MORE= to skip that stage, and RL_BUDGET=4). sql's
# level: LEVEL=1 (default), 2, 3 or mixed.
set -euo pipefail
cd "$(dirname "$0")/.."
world=${1:?usage: bench/language-agent.sh frozenlake|sql [DIR]}
dir=${2:-$(mktemp -d)}
mkdir -p "$dir"
tw() { node bin/turnwise.js "$@"; }
# Wall and CPU (user + system, children included) seconds of one command, written to $dir/$name.time.
timed() {
  local name=$1
  shift
  local t0 c0
  t0=$(date +%s.%N)
  c0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  "$@"
  awk -v t0="$t0" -v t1="$(date +%s.%N)" -v c0="$c0" -v c1="$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)" \
    -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "{\"wall\":%.1f,\"cpu\":%.1f}", t1 - t0, (c1 - c0) / hz }' >"$dir/$name.time"
}

train=${TRAIN:-0:300}
test=${TEST:-1000000:1000040}
tasks=${TASKS:-100}
more=
case $world in
frozenlake)
  env=(--env frozenlake --random --size 4 --p 0.8 --slippery)
  vocab=512
  model="transformer:layers=2,d=64,heads=4,ctx=192,mode=text,tokenizer=$dir/tokenizer.json"
  tok=(--mode text --episodes 200)
  bc=(--train-seeds "$train" --test-seeds "$test" --budget 100 --epochs "${EPOCHS:-3}" --batch-size 16 --lr 2e-3 --eval-samples 4)
  rl=(--train-seeds "$train" --test-seeds "$test" --budget 100 --iters "${ITERS:-10}" --eval-episodes 160)
  cmp=(--tasks "$tasks" --samples 8 --K 1 --T 100 --seed 1000000)
  tau=1
  rl_tau=${RL_TEMPERATURE-}
  ;;
sql)
  train=${TRAIN:-0:600}
  # LEVEL: sql's difficulty, 1 (the figures' default), 2, 3 or mixed.
  env=(--env sql --level "${LEVEL:-1}")
  vocab=1024
  tau=0.3
  model="transformer:layers=2,d=64,heads=4,ctx=1024,temperature=$tau,tokenizer=$dir/tokenizer.json"
  tok=(--episodes 200)
  bc=(--train-seeds "$train" --test-seeds "$test" --epochs "${EPOCHS:-12}" --batch-size 8 --lr 2e-3 --eval-samples 2)
  # A second cloning stage from the first clone on new tasks (MORE= skips it): copying the question's
  # values into the query comes with it (bench/README.md, "The language agent").
  more=${MORE-600:1800}
  more_bc=(--train-seeds "$more" --test-seeds "$test" --epochs "${MORE_EPOCHS:-6}" --batch-size 8 --lr 2e-3 --eval-samples 2)
  # RL on every task the clone saw (the first stage's start to the second's end).
  rl_seeds=$train
  [ -n "$more" ] && rl_seeds="${train%%:*}:${more#*:}"
  # Dynamic sampling (DAPO): at τ 0.3 most groups of a good clone are all-success or all-fail; 30
  # iterations of it.
  rl=(--train-seeds "$rl_seeds" --test-seeds "$test" --iters "${ITERS:-30}" --dynamic-sampling --eval-episodes 80)
  cmp=(--tasks "$tasks" --samples 8 --K 1 --T 20 --seed 1000000)
  # RL samples at τ 0.6: at the clone's 0.3 even dynamic sampling finds few groups that differ
  # (bench/README.md, "The language agent"); the RL policy is compared at the clone's τ.
  rl_tau=${RL_TEMPERATURE-0.6}
  ;;
*)
  echo "bench/language-agent.sh: world: got \"$world\"; expected frozenlake or sql" >&2
  exit 2
  ;;
esac

echo "[$world] tokenizer" >&2
timed tokenizer tw tokenizer train "${env[@]}" "${tok[@]}" --vocab "$vocab" --seed 0 --out "$dir/tokenizer.json" --json >"$dir/tokenizer-train.json"
tw tokenizer stats "${env[@]}" "${tok[@]}" --tokenizer "$dir/tokenizer.json" --seed 1000000 --json >"$dir/tokenizer-stats.json"
if [ -n "$more" ]; then
  echo "[$world] behaviour cloning, then more of it on new tasks" >&2
  timed bc-first tw bc "${env[@]}" --policy "$model" "${bc[@]}" --seed 0 --out "$dir/bc-first" >"$dir/bc-first.txt"
  timed bc tw bc "${env[@]}" --policy "transformer:from=$dir/bc-first" "${more_bc[@]}" --seed 0 --out "$dir/bc" >"$dir/bc.txt"
else
  echo "[$world] behaviour cloning" >&2
  timed bc tw bc "${env[@]}" --policy "$model" "${bc[@]}" --seed 0 --out "$dir/bc" >"$dir/bc.txt"
fi
# RL_BUDGET: the training episodes' turn budget (train's default, 100, when unset) — a plumbing run's
# untrained model otherwise writes every episode to 100 turns.
[ -n "${RL_BUDGET:-}" ] && rl+=(--budget "$RL_BUDGET")
# RL_TEMPERATURE: the τ RL samples and trains at (unset or empty: the clone's). The clone is written
# again with it (bc of 0 epochs keeps the weights), and the RL policy is compared at the clone's τ.
rl_from=$dir/bc
rl_policy=$dir/rl
if [ -n "$rl_tau" ]; then
  echo "[$world] the clone at τ $rl_tau for RL" >&2
  tw bc "${env[@]}" --policy "transformer:from=$dir/bc,temperature=$rl_tau" --train-seeds "${train%%:*}:$((${train%%:*} + 1))" --test-seeds "$test" --epochs 0 --eval-samples 1 --seed 0 --out "$dir/bc-rl" >"$dir/bc-rl.txt"
  rl_from=$dir/bc-rl
  rl_policy="transformer:from=$dir/rl,temperature=$tau"
fi
echo "[$world] token-level GRPO from the clone" >&2
timed rl tw train "${env[@]}" --policy "$rl_from" "${rl[@]}" --seed 1 --out "$dir/rl" --json >"$dir/rl.json"
echo "[$world] RL vs its base, paired by task" >&2
# Step quality and recovery are the study's (issue 23); here one state each keeps them cheap.
timed compare tw compare "${env[@]}" --a "$rl_policy" --b "$dir/bc" "${cmp[@]}" --states 1 --actions 1 --continuations 1 --json >"$dir/compare.json"

node -e '
const fs = require("fs");
const [dir, world, twoStages, rlTemperature] = process.argv.slice(1);
const read = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, "utf8"));
/** A cloning stage: its held-out and training success (and, for the final clone, its parameters), its time. */
const clone = (name, parameters) => {
  const b = read(`${name}/bc.json`);
  return { test: b.test.success, train: b.train.success, ...(parameters ? { parameters: b.student.parameters } : {}), time: read(`${name}.time`) };
};
const rl = read("rl.json");
const cmp = read("compare.json");
const stats = read("tokenizer-stats.json");
console.log(JSON.stringify({
  world,
  // The env and its params (sql: the level).
  env: stats.env,
  dir,
  tokensPerTurn: stats.tokensPerTurn,
  bc: clone("bc", true),
  // sql: the first stage (the clone the second continues), as its own figures; null when this run had one.
  bcFirst: twoStages === "1" ? clone("bc-first") : null,
  // The τ RL sampled at when RL_TEMPERATURE set one (its final figure is at that τ), else null.
  rl: { final: rl.final ?? rl.test ?? null, iters: rl.iters ?? null, temperature: rlTemperature === "" ? null : Number(rlTemperature), time: read("rl.time") },
  // Pass@1 at the training budget, RL (a) minus the clone (b), its bootstrap interval over tasks.
  compare: { rl: cmp.passKT.a.passKT[0][0], bc: cmp.passKT.b.passKT[0][0], diff: cmp.passKT.diff[0][0], diffCi95: cmp.passKT.diffCi95[0][0], likelihood: cmp.likelihood, time: read("compare.time") },
  tokenizerTime: read("tokenizer.time"),
}));
' "$dir" "$world" "$([ -n "$more" ] && echo 1 || echo 0)" "$rl_tau"
