#!/usr/bin/env bash
# Pipelines of compiled stages, measured in one run (numbers in
# docs/distributed.md):
#  1. the training loop's stall per checkpoint, asynchronous writer vs a
#     synchronous save of the same state (the MLP of bench/codegen, 784-1024-
#     1024-10, Adam: 21 MB of parameters and moments, ~half per rank);
#  2. a 2-stage x 2-replica pipeline (cpu.onednn + cpu.mlir) against one rank
#     training the same global batch, and the planner's prediction.
# usage: bench/pipeline/bench.sh [build-dir]   (after scripts/build.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$here/build}"
bin="$build/bin"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
model="$here/bench/codegen/mlp_784.mlir"
cluster="$here/examples/clusters/local-two-kinds.json"
make_plan=("$here/.venv/bin/python" "$here/utils/make_plan.py" "$cluster")
# Global batch 1024: 2 stages x 2 replicas in 2 micro-batches of 512 (256
# per replica), and one rank in 4 micro-batches of 256.
"${make_plan[@]}" "$out/pipe.json" --global-batch 1024 --micro-batches 2 \
  --stage 0:2=onednn:2 --stage 2:3=mlir:2
"${make_plan[@]}" "$out/one.json" --global-batch 1024 --micro-batches 4 --stage 0:3=onednn:1

"$bin/het-compile" "$model" --optimizer adam --lr 0.001 --plan "$out/pipe.json" -o "$out/pipe"
for mode in async sync; do
  flag=(); [ "$mode" = sync ] && flag=(--sync-checkpoint)
  "$bin/het-run" -n 4 --timeout-ms 60000 "$out/pipe" --steps 40 --print-every 40 \
    --checkpoint-dir "$out/ck-$mode" --checkpoint-every 4 --full-every 1 "${flag[@]}" \
    > "$out/$mode.txt"
done
stall() { # mean stall (ms) over the ranks' "checkpoint stall" lines
  sed -nE 's/.*checkpoint stall .*: mean ([0-9.]+) ms, max ([0-9.]+) ms.*/\1 \2/p' "$1" |
    awk '{m += $1; if ($2 > x) x = $2} END {printf "%.2f %.2f", m / NR, x}'
}
read -r amean amax <<< "$(stall "$out/async.txt")"
read -r smean smax <<< "$(stall "$out/sync.txt")"
state=$(du -sk "$out/ck-sync/rank0" | cut -f1)
echo "checkpoint stall per save (10 full saves per rank, 4 ranks; rank 0 writes $((state / 10240)) MB per save):"
echo "  asynchronous: mean $amean ms, max $amax ms"
echo "  synchronous:  mean $smean ms, max $smax ms"
awk -v a="$amean" -v s="$smean" 'BEGIN {printf "  async/sync stall ratio %.3f\n", a / s}'

"$bin/het-compile" "$model" --optimizer adam --lr 0.001 --plan "$out/one.json" -o "$out/one"
"$out/one" --steps 20 --print-every 20 > "$out/one.txt"
"$bin/het-run" -n 4 --timeout-ms 60000 "$out/pipe" --steps 20 --print-every 20 > "$out/pipe.txt"
one=$(sed -nE 's/.*iteration time ([0-9.]+) ms.*/\1/p' "$out/one.txt")
pipe=$(sed -nE 's/.*iteration time ([0-9.]+) ms.*/\1/p' "$out/pipe.txt")
echo "global batch 1024 (4 x 256), Adam, iteration time:"
echo "  one rank (cpu.onednn, 4 micro-batches):          $one ms"
echo "  2 stages x 2 replicas (onednn + mlir, 2 each):   $pipe ms on $(nproc) cores"
awk -v a="$one" -v b="$pipe" 'BEGIN {printf "  pipeline/one-rank time ratio %.2f\n", b / a}'
