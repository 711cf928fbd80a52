#!/usr/bin/env bash
# Judges het-plan's choice of memory savers by measurement (not a test): the
# capped case of test/plan/zero.test (the example GPT on the two local kinds
# given 315 KiB each, no tensor parallelism), the fastest plan het-plan finds
# under its own choice (--zero auto --recompute auto) and under each forced
# combination that fits, each compiled and run 200 steps by het-run, in
# 3 alternating rounds. Prints het-plan's prediction and each run's median
# iteration and largest peak of buffers.
#
#   bash bench/memory/capped_choice.sh [BUILD_DIR]
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${1:-$here/build}/bin"
work="$(mktemp -d /tmp/het-capped-choice.XXXXXX)"
plan=(--cluster "$here/examples/clusters/local-two-kinds.json"
      --model "$here/examples/models/gpt.mlir"
      --devices "$here/test/plan/Inputs/clusters/tiny-memory-cpus.devices.json"
      --global-batch 8 --max-micro-batches 4 --tensor-parallel 1)
echo "$(date +%F), $(hostname) ($(nproc) cores): het-plan's pick against the other saver combinations"
for combo in "auto auto" "0 none" "1 none" "2 none" "3 none" "2 selective" "3 selective" "2 full" "3 full"; do
  set -- $combo
  name="zero-$1-recompute-$2"
  predicted=$("$bin/het-plan" "${plan[@]}" --zero "$1" --recompute "$2" --top 1 \
              --write-plan "$work/$name.json" | grep -m1 -E "^plan 1:|does not fit:")
  echo "$name: $predicted"
  [ -f "$work/$name.json" ] &&
    "$bin/het-compile" "$here/examples/models/gpt.mlir" --optimizer adam --lr 0.001 \
      --plan "$work/$name.json" -o "$work/$name.exe" > /dev/null 2>&1
done
for round in 1 2 3; do
  for exe in "$work"/*.exe; do
    ranks=$(python3 -c "import json, sys; print(sum(s.get('replicas', 1) * s.get('tensor_parallel', 1) for s in json.load(open(sys.argv[1]))['stages']))" "${exe%.exe}.json")
    out=$("$bin/het-run" -n "$ranks" --timeout-ms 120000 "$exe" --steps 200 --print-every 1000 2>&1)
    iteration=$(echo "$out" | grep -m1 -o "iteration time [0-9.]* ms" | awk '{print $3}')
    peak=$(echo "$out" | grep -o "peak [0-9.]* MiB of buffers" | awk '{print $2}' | sort -n | tail -1)
    echo "round $round $(basename "$exe" .exe): $iteration ms per iteration, largest peak $peak MiB of buffers"
  done
done
rm -rf "$work"
