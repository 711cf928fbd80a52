#!/usr/bin/env bash
# Planner benchmark: planning time over layers x devices x kinds, planner
# against brute force, and the end-to-end time of het-plan on the 1024-device
# six-vendor cluster with GPT-3 175B (baselines included). Prints tables;
# asserts nothing (times on a shared machine drift; compare the ratios).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${HET_BIN:-$here/build/bin}"
"$bin/het-plan" --benchmark
echo
echo "het-plan end to end: six-vendor-1024 x gpt3-175b (plan + uniform split + 6 single-vendor plans), best of 3"
best=0
for i in 1 2 3; do
  start=$(date +%s%N)
  "$bin/het-plan" --cluster "$here/examples/clusters/six-vendor-1024.json" \
    --model "$here/examples/models/gpt3-175b.json" --global-batch 1536 > /dev/null
  t=$(( $(date +%s%N) - start ))
  if [ "$best" = 0 ] || [ "$t" -lt "$best" ]; then best=$t; fi
done
printf "wall time: %d.%03d s\n" $((best / 1000000000)) $(((best / 1000000) % 1000))
