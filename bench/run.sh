#!/usr/bin/env bash
# Every benchmark, one JSON object per line (see bench/README.md for what each measures).
set -euo pipefail
cd "$(dirname "$0")/.."
tw() { node bin/turnwise.js "$@"; }
echo "{\"bench\":\"env\",\"result\":$(tw bench env frozenlake --map 8x8 --slippery --steps 5000000 --json)}"
echo "{\"bench\":\"env-tools\",\"result\":$(tw bench env all --json)}"
echo "{\"bench\":\"rollout\",\"result\":$(tw bench rollout frozenlake --map 8x8 --slippery --steps 2000000 --json)}"
echo "{\"bench\":\"passkt\",\"result\":$(node --import tsx bench/passkt.ts)}"
echo "{\"bench\":\"nn\",\"result\":$(tw bench nn --json)}"
echo "{\"bench\":\"serve\",\"result\":$(tw bench serve --json)}"
echo "{\"bench\":\"study-budget\",\"result\":$(node --import tsx bench/study-budget.ts --profile quick)}"
echo "{\"bench\":\"sandbox\",\"result\":[$(node --import tsx bench/sandbox.ts | paste -sd,)]}"
echo "{\"bench\":\"memory\",\"result\":[$(node --import tsx bench/memory.ts --scale 0.1 | paste -sd,)]}"
echo "{\"bench\":\"summary\",\"result\":$(node --import tsx bench/summary.ts --episodes 40000)}"
echo "{\"bench\":\"ui\",\"result\":$(tw bench ui --json)}"
echo "{\"bench\":\"queue\",\"result\":$(tw bench queue --json)}"
echo "{\"bench\":\"fog\",\"result\":$(node --import tsx bench/fog.ts)}"
echo "{\"bench\":\"rehearsal\",\"result\":$(node --import tsx bench/rehearsal.ts --iters 150 --at 10,25,50,100,150)}"
echo "{\"bench\":\"adapt\",\"result\":$(node --import tsx bench/adapt.ts --base-iters 150 --at 640,1280,2560,5120)}"
