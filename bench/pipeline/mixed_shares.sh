#!/usr/bin/env bash
# A stage whose replicas are of two kinds: each micro-batch split by the
# kinds' measured speeds against an equal split, measured in one run
# (numbers in docs/distributed.md).
#
#  1. het-compile --plan auto on examples/clusters/local-one-each.json (one
#     cpu.onednn rank, one cpu.mlir rank) measures both kinds on the model,
#     writes them (<out>.devices.json) and plans;
#  2. het-plan with those measured kinds searches the plan space (what it
#     chooses, predicted) and scores a single mixed stage with the
#     speed-proportional shares and with equal shares;
#  3. both mixed-stage plans train under het-run, one thread per rank; the
#     measured iteration times and their ratio are printed beside the
#     predictions.
# The model is bench/codegen's 784-1024-1024-10 MLP, global batch 512 in
# one micro-batch, SGD.
# usage: bench/pipeline/mixed_shares.sh [build-dir] [steps]   (after scripts/build.sh)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$here/build}"
steps="${2:-30}"
bin="$build/bin"
python="$here/.venv/bin/python"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
model="$here/bench/codegen/mlp_784.mlir"
cluster="$here/examples/clusters/local-one-each.json"
batch=512

echo "mixed-kind stage: speed-proportional shares vs an equal split ($(date -u +%F), $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1))"
"$bin/het-compile" "$model" --cluster "$cluster" --plan auto --global-batch "$batch" \
  --micro-batches 1 -o "$out/auto" 2> "$out/auto.txt"
sed -n 's/^measured /  measured /p' "$out/auto.txt"
# Shares in proportion to the measured FLOP/s, whole samples adding up.
read -r fast slow <<< "$("$python" - "$out/auto.devices.json" "$batch" <<'EOF'
import json, sys
rates = {d["name"]: d["peak_tflops"]["fp32"] for d in json.load(open(sys.argv[1]))["devices"]}
batch = int(sys.argv[2])
fast = round(batch * rates["cpu.onednn"] / (rates["cpu.onednn"] + rates["cpu.mlir"]))
print(fast, batch - fast)
EOF
)"
"$python" "$here/utils/make_plan.py" "$cluster" "$out/even.json" --global-batch "$batch" \
  --micro-batches 1 --stage "0:3=onednn:1@$((batch / 2)),mlir:1@$((batch / 2))"
"$python" "$here/utils/make_plan.py" "$cluster" "$out/shares.json" --global-batch "$batch" \
  --micro-batches 1 --stage "0:3=onednn:1@$fast,mlir:1@$slow"

predict() { # het-plan's iteration time for a plan, in ms
  "$bin/het-plan" --cluster "$cluster" --model "$model" --devices "$out/auto.devices.json" \
    --evaluate "$1" | sed -nE 's/^predicted iteration ([0-9.]+) (m?s).*/\1 \2/p' |
    awk '{print $2 == "s" ? $1 * 1000 : $1}'
}
"$bin/het-plan" --cluster "$cluster" --model "$model" --devices "$out/auto.devices.json" \
  --global-batch "$batch" --max-micro-batches 1 --top 1 > "$out/search.txt"
echo "  het-plan with the measured kinds chooses:"
sed -n '/^plan 1/,/^  all-reduce/p' "$out/search.txt" | sed 's/^/    /'

measure() { # median iteration time in ms of a plan under het-run
  "$bin/het-compile" "$model" --plan "$1" -o "$out/exe"
  "$bin/het-run" -n 2 --timeout-ms 60000 "$out/exe" --steps "$steps" --print-every "$steps" \
    --threads 1 2> /dev/null | sed -nE 's/.*iteration time ([0-9.]+) ms.*/\1/p'
}
even_p=$(predict "$out/even.json"); shares_p=$(predict "$out/shares.json")
even_m=$(measure "$out/even.json"); shares_m=$(measure "$out/shares.json")
printf "  %-34s %12s %12s\n" "one stage on onednn + mlir" "predicted ms" "measured ms"
printf "  %-34s %12.2f %12.2f\n" "equal shares ($((batch / 2)) + $((batch / 2)))" "$even_p" "$even_m"
printf "  %-34s %12.2f %12.2f\n" "shares by speed ($fast + $slow)" "$shares_p" "$shares_m"
awk -v e="$even_m" -v s="$shares_m" 'BEGIN {printf "  measured speed-up of the shares by speed over the equal split: %.2fx\n", e / s}'
