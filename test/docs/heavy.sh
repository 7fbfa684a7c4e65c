#!/usr/bin/env bash
# The docs' heavy commands — the blocks marked `<!-- docs-test: heavy test/docs/heavy.sh — … -->`,
# too slow for `npm test` — run as a reader runs them: in a fresh directory, `turnwise` on PATH, each
# command verbatim (test/docs/docs.test.ts checks that every such command is written here). About
# 15 CPU-minutes. `TURNWISE_DOCS_HEAVY=test/docs/heavy.sh node --import tsx --test test/docs/docs.test.ts`
# runs them too, and compares their output with the pages (=1: the default study of `npm start` too).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
mkdir "$dir/bin"
printf '#!/bin/sh\nexec node %s/bin/turnwise.js "$@"\n' "$repo" >"$dir/bin/turnwise"
chmod +x "$dir/bin/turnwise"
export PATH="$dir/bin:$PATH" NO_COLOR=1
cd "$dir"
mkdir runs
# As in a checkout: examples/ and node_modules/ (npx tsx examples/…).
ln -s "$repo/examples" examples
ln -s "$repo/node_modules" node_modules

# README.md and docs/study.md: the quick study, and what reads its run.
turnwise study budget --profile quick 2>/dev/null
turnwise study verdicts --in runs/budget-quick/summary.json
turnwise report runs/budget-quick

# docs/budget-study.md: the language study's quick and default profiles, and the quick one in its four worlds.
turnwise study budget --policy-kind transformer --profile quick 2>/dev/null
turnwise study budget --policy-kind transformer 2>/dev/null
turnwise study budget --policy-kind transformer --profile quick --worlds frozenlake-text,sql,tools,code --out runs/lang-quick 2>/dev/null

# docs/training.md: ES, the MLP over random maps, behaviour cloning.
turnwise train --map 4x4 --slippery --policy tabular --algo es --seed 1 --out runs/es1 2>/dev/null
turnwise train --policy mlp --random --size 4 --p 0.8 --slippery --train-seeds 0:5000 --test-seeds 1000000:1000200 --seed 1 --out runs/n1 2>/dev/null
turnwise bc --random --size 4 --p 0.8 --slippery --expert oracle:horizon=100 \
    --train-seeds 0:5000 --test-seeds 1000000:1000200 --budget 100 --out runs/bc --seed 0

# docs/reward-hacking.md: two trainings on the code env's candidate variant, their compare, the study.
turnwise train --env code --env-params '{"mode":"choose","reward":"visible"}' --policy mlp:hidden=32 --iters 40 --groups 32 --budget 2 --train-seeds 0:100000 --test-seeds 100000:100200 --eval-episodes 200 --seed 1 --out runs/visible 2>/dev/null
turnwise train --env code --env-params '{"mode":"choose"}' --policy mlp:hidden=32 --iters 40 --groups 32 --budget 2 --train-seeds 0:100000 --test-seeds 100000:100200 --eval-episodes 200 --seed 1 --out runs/hidden 2>/dev/null
turnwise compare --env code --env-params '{"mode":"choose","reward":"visible"}' --a runs/visible --b runs/hidden --seed 100000 --tasks 200 --samples 4 --K 1,4 --T 2
# The study with its judge arm: the stand-in judge served on loopback for the study's length, waited
# for by its "listening on" line.
mkfifo judge.out
npx tsx examples/judges/detector-judge.ts --port 8000 >judge.out &
judge=$!
read -r _ <judge.out
turnwise study hacking --judge openai:http://127.0.0.1:8000/v1#detector 2>/dev/null
kill "$judge"
# docs/reward-hacking.md#tool-calls: two trainings on the tools env's slot variant and their compare.
turnwise train --env tools --env-params '{"mode":"choose","level":1,"reward":"format"}' --policy mlp:hidden=32 --iters 40 --groups 16 --budget 10 --train-seeds 0:100000 --test-seeds 100000:100200 --eval-episodes 200 --seed 1 --out runs/format 2>/dev/null
turnwise train --env tools --env-params '{"mode":"choose","level":1}' --policy mlp:hidden=32 --iters 40 --groups 16 --budget 10 --train-seeds 0:100000 --test-seeds 100000:100200 --eval-episodes 200 --seed 1 --out runs/verified 2>/dev/null
turnwise compare --env tools --env-params '{"mode":"choose","level":1,"reward":"verified"}' --a runs/format --b runs/verified --seed 100000 --tasks 200 --samples 4 --K 1,4 --T 10
# docs/shaping.md: tabular training under each shaping, judged on the true reward (≈ 10 CPU-minutes).
turnwise study shaping --map 4x4 --slippery --seeds 0,1,2,3,4 2>/dev/null
turnwise study shaping --map 4x4 --slippery --algo ppo 2>/dev/null
turnwise study shaping --map 8x8 --slippery --budget 200 2>/dev/null

echo "heavy commands ran in $dir"
