#!/usr/bin/env bash
# Where a small pipeline's step goes: the digits MLP (examples/models/
# mlp.mlir, 64-128-64-10) as 2 stages x 2 replicas (cpu.onednn, then
# cpu.mlir) on examples/clusters/local-two-kinds.json, global batch 64 in 2
# micro-batches, under het-run with four ranks. Each rank prints its time
# per step split into kernels (its stage functions' compute) and the time
# outside them -- messages, collectives, and the runtime's own work
# (lib/Runtime/PipelineMain.cpp); this prints every rank's line for each
# of R runs, then the mean over ranks and runs (numbers in
# docs/distributed.md, issue 18's "time outside kernels").
# usage: bench/pipeline/overhead.sh [build-dir] [steps] [runs]   (after scripts/build.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$here/build}"
steps="${2:-400}"
runs="${3:-3}"
bin="$build/bin"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cluster="$here/examples/clusters/local-two-kinds.json"
"$here/.venv/bin/python" "$here/utils/make_plan.py" "$cluster" "$out/plan.json" \
  --global-batch 64 --micro-batches 2 --stage 0:2=onednn:2 --stage 2:3=mlir:2
"$bin/het-compile" "$here/examples/models/mlp.mlir" --lr 0.1 --plan "$out/plan.json" -o "$out/pipe"
echo "digits MLP, 2 stages x 2 replicas, 4 ranks on $(nproc) cores, $steps steps," \
  "$(date -u '+%F %H:%M UTC'), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
for run in $(seq "$runs"); do
  "$bin/het-run" -n 4 --timeout-ms 60000 "$out/pipe" --steps "$steps" --print-every "$steps" \
    > "$out/run$run.txt"
  grep "time per step" "$out/run$run.txt" | sed "s/^/run $run /"
done
cat "$out"/run*.txt | sed -nE 's/.*time per step ([0-9.]+) ms: kernels ([0-9.]+) ms, outside kernels ([0-9.]+) ms.*runtime ([0-9.]+)\)/\1 \2 \3 \4/p' |
  awk '{t += $1; k += $2; o += $3; r += $4; n++}
       END {printf "mean over %d rank runs: step %.3f ms, kernels %.3f ms, outside kernels %.3f ms (%.0f%%), of it the runtime %.3f ms\n",
                   n, t / n, k / n, o / n, 100 * o / t, r / n}'
