#!/usr/bin/env bash
# Byte identity across a refactor: writes every output that must not change into one directory.
#   bash bench/byte-identity.sh DIR [POLICY_DIR]
# Run it on the commit before and after a change, then `diff -r BEFORE AFTER` (or compare
# DIR/sha256.txt). POLICY_DIR, when given, is the trained MLP run the rollouts use (so both sides
# roll out the same weights); without it, the MLP trained here is used. See bench/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/byte-identity.sh DIR [POLICY_DIR]}
mkdir -p "$out"
tw() { node bin/turnwise.js "$@"; }

# Training runs: their printed figures (JSON) and their final policies.
tw train --map 4x4 --slippery --policy tabular --seed 1 --iters 60 --out "$out/t-grpo" --json >"$out/train-tabular-grpo.json"
tw train --map 4x4 --slippery --policy tabular --algo es --seed 1 --iters 20 --out "$out/t-es" --json >"$out/train-tabular-es.json"
tw train --policy mlp --random --size 4 --p 0.8 --slippery --train-seeds 0:500 --test-seeds 1000000:1000050 \
  --iters 12 --groups 16 --eval-episodes 400 --seed 1 --out "$out/t-mlp" --json >"$out/train-mlp-grpo.json"
policy=${2:-$out/t-mlp}

# Rollouts: fixed and random maps, 4x4 and 8x8, four kinds of policy.
i=0
for env in "--map 4x4 --slippery" "--map 8x8 --slippery" "--random --size 4 --p 0.8 --slippery" "--random --size 8 --p 0.8 --slippery"; do
  i=$((i + 1))
  for pol in random oracle:eps=0.2 tabular "$policy"; do
    name=$(basename "$pol" | tr ':=,' '___')
    # A tabular policy is per-map; a 4x4 MLP sees 4x4 features only.
    if [ "$pol" = tabular ] && [[ $env == *--random* ]]; then continue; fi
    if [ "$pol" = "$policy" ] && [[ $env == *8* ]]; then continue; fi
    tw rollout $env --policy "$pol" --tasks 40 --samples 4 --budget 60 --seed 3 --out "$out/rollout-$i-$name.jsonl" --json >/dev/null
  done
done

# Diagnostics: Pass@(K,T) and the side-by-side comparison.
tw eval --map 4x4 --slippery --policy oracle:eps=0.2 --tasks 8 --samples 16 --K 1,4 --T 10,50 --resamples 200 --seed 2 --json >"$out/eval-oracle.json"
tw eval --random --size 4 --p 0.8 --slippery --policy "$policy" --tasks 8 --samples 16 --K 1,4 --T 10,50 --resamples 200 --seed 2 --json >"$out/eval-mlp.json"
tw compare --random --size 4 --p 0.8 --slippery --a "$policy" --b oracle:temp=0.5 --tasks 6 --samples 8 --K 1,4 --T 20,60 --resamples 200 --seed 2 --json >"$out/compare.json"
tw credit fidelity --map 4x4 --slippery --policy oracle:eps=0.3 --budget 30 --seed 2 --json >"$out/credit-fidelity.json"

# Printed tables (text, not JSON) of the same diagnostics.
tw eval --map 4x4 --slippery --policy oracle:eps=0.2 --tasks 8 --samples 16 --K 1,4 --T 10,50 --resamples 200 --seed 2 >"$out/eval-oracle.txt"
tw compare --random --size 4 --p 0.8 --slippery --a "$policy" --b oracle:temp=0.5 --tasks 6 --samples 8 --K 1,4 --T 20,60 --resamples 200 --seed 2 >"$out/compare.txt"
tw credit fidelity --map 4x4 --slippery --policy oracle:eps=0.3 --budget 30 --seed 2 >"$out/credit-fidelity.txt"
tw env oracle frozenlake --map 4x4 --slippery --budget 20 --json >"$out/env-oracle.json"
tw calc compound --q 0.98 --n 50 --simulate 20000 --seed 1 --json >"$out/calc-compound.json"
tw calc dead-groups --p 0.05 --G 8 --batch 64 --json >"$out/calc-dead-groups.json"
tw calc tokens --per-trajectory 100000 --batch 64 --steps 1000 --json >"$out/calc-tokens.json"
tw demo --episodes 500 --json >"$out/demo.json"

# The file readers: credit (every method family, text and JSON), eval, summary and export of one file.
file="$out/rollout-1-oracle_eps_0.2.jsonl"
for m in outcome discounted grpo drgrpo rloo gigpo turn-level reverse-turn gae exact "grpo --task-norm"; do
  name=$(echo "$m" | tr ' ' '_' | tr -d '-')
  tw credit --in "$file" --method $m --json >"$out/credit-in-$name.json"
  tw credit --in "$file" --method $m >"$out/credit-in-$name.txt"
done
tw eval --in "$file" --K 1,2,4 --T 60 --resamples 200 --seed 2 --json >"$out/eval-in.json"
tw eval --in "$file" --K 1,2,4 --T 60 --resamples 200 --seed 2 >"$out/eval-in.txt"
tw summary --in "$file" >"$out/summary-in.txt"
tw summary --in "$file" --json >"$out/summary-in.json"
tw export --in "$file" --format openai --method gigpo --out "$out/export-openai.jsonl" >/dev/null
# --format turnwise-parquet is the layout --format verl wrote until issue 26 (same bytes; same file name, so
# that the hashes of a commit before it compare).
tw export --in "$file" --format turnwise-parquet --method gigpo --out "$out/export-verl.parquet" >/dev/null

# The tool envs in process: their scripted oracles with detours, one rollout file each, and the readers on it.
for env in sql tools code search; do
  tw rollout --env $env --policy oracle:eps=0.2 --tasks 6 --samples 4 --budget 12 --seed 5 --out "$out/rollout-$env.jsonl" --json >/dev/null
  tw credit --in "$out/rollout-$env.jsonl" --method gigpo >"$out/credit-in-$env.txt"
  tw eval --in "$out/rollout-$env.jsonl" --K 1,2 --T 12 --resamples 200 --seed 2 >"$out/eval-in-$env.txt"
done

# The budget study, quick profile: its summary (JSON) and its terminal summary.
tw study budget --profile quick --out "$out/study" --force --json >"$out/study-quick.json"
tw report "$out/study" >/dev/null
tw study budget --profile quick --out "$out/study" --force >"$out/study-quick.txt"

# Timings are the only thing allowed to differ: strip them, then hash everything.
for f in "$out"/*.json; do
  node -e 'const fs=require("fs");const f=process.argv[1];const strip=(x)=>{if(Array.isArray(x))return x.map(strip);if(x&&typeof x==="object"){const o={};for(const[k,v]of Object.entries(x)){if(/^(seconds|time|timings?|elapsed|wall|path|dir|out)$/i.test(k)||/(Seconds|Ms|Time|Path|Dir)$/.test(k))continue;o[k]=strip(v)}return o}return x};fs.writeFileSync(f,JSON.stringify(strip(JSON.parse(fs.readFileSync(f,"utf8"))))+"\n")' "$f"
done
# The study's terminal summary ends with its wall-clock times.
sed -i '/^time: /d' "$out/study-quick.txt"
# Text outputs name their files: the directory is written as OUT, so two directories compare.
for f in "$out"/*.txt "$out"/*.json "$out"/*.jsonl; do sed -i "s#$out#OUT#g" "$f"; done
(cd "$out" && sha256sum ./*.json ./*.jsonl ./*.txt ./*.parquet ./t-*/policy.safetensors | sort -k2) >"$out/sha256.txt"
cat "$out/sha256.txt"
