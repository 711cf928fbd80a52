#!/usr/bin/env bash
# The planner's prediction against the measured iteration time of two
# pipelines of the MLP, the CNN and the GPT on the local two-kind cluster
# (four ranks on this host, 2 micro-batches): 2x2 (layers [0, 2) on the two
# cpu.onednn devices, the rest on the two cpu.mlir devices) and 3-stage
# ([0, 1) and [1, 2) on one cpu.onednn device each, the rest on the two
# cpu.mlir devices), priced two ways:
#   roofline: the kinds calibrated by --plan auto (one step on one thread)
#             and the cluster's link figures, as het predicted before
#             measured profiles;
#   measured: het-tune stages' layer profiles and messages
#             (het-compile --tuning-db);
# and simulated: het-sim's median of 1000 iterations of the plan priced by
# the same measurements (per-pass noise, stragglers; the four ranks share
# the host's cores).
# run is the median over three runs of 100 steps (each run's iteration
# time is the median of its steps). Asserts nothing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$here/build/bin"
cluster="$here/examples/clusters/local-two-kinds.json"
out="$(mktemp -d)"
db="$out/tune.db"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
printf "%-5s %-7s %13s %13s %13s %13s %13s %13s %13s\n" model shape roofline-ms measured-ms \
  het-sim-ms run-ms run/roofline run/measured run/het-sim
for model in mlp cnn gpt; do
  src="$here/examples/models/$model.mlir"
  layers=$("$bin/het-plan" --model "$src" --cluster "$cluster" --show-model | sed -n 's/^model [^:]*: \([0-9]*\) layers.*/\1/p')
  "$bin/het-tune" stages "$src" --cluster "$cluster" --db "$db" > "$out/$model.stages.txt"
  # The calibrated roofline kinds (what --plan auto measures).
  "$bin/het-compile" "$src" --lr 0.05 --cluster "$cluster" --micro-batches 2 \
    -o "$out/$model.auto" 2> "$out/$model.auto.txt"
  global=$(python3 -c "import json; print(json.load(open('$out/$model.auto.plan.json'))['global_batch'])")
  for shape in 2x2 3-stage; do
    name="$out/$model.$shape"
    if [ "$shape" = 2x2 ]; then
      stages=(--stage 0:2=onednn:2 --stage "2:$layers=mlir:2")
    else
      stages=(--stage 0:1=onednn:1 --stage 1:2=onednn:1 --stage "2:$layers=mlir:2")
    fi
    python3 "$here/utils/make_plan.py" "$cluster" "$name.json" --global-batch "$global" \
      --micro-batches 2 "${stages[@]}"
    roofline=$("$bin/het-plan" --cluster "$cluster" --model "$src" --devices "$out/$model.auto.devices.json" \
      --evaluate "$name.json" | sed -n 's/^predicted iteration \([0-9.]*\) \(m\?s\).*/\1 \2/p' \
      | awk '{print ($2 == "s") ? $1 * 1000 : $1}')
    "$bin/het-compile" "$src" --lr 0.05 --cluster "$cluster" --plan "$name.json" \
      --tuning-db "$db" -o "$name" 2> "$name.txt"
    measured=$(sed -n 's/^predicted iteration time \([0-9.]*\) ms with the measurements.*/\1/p' \
      "$name.txt")
    sim=$("$bin/het-sim" --cluster "$cluster" --model "$src" --plan "$name.json" --tuning-db "$db" \
      --iterations 1000 --json | python3 -c "import json, sys; print(json.load(sys.stdin)['iterations']['p50_s'] * 1e3)")
    runs=()
    for k in 1 2 3; do
      runs+=("$("$bin/het-run" --cluster "$cluster" --timeout-ms 120000 "$name" \
        --steps 100 --print-every 1000 2>/dev/null | sed -n 's/.*iteration time \([0-9.]*\) ms.*/\1/p')")
    done
    run=$(printf "%s\n" "${runs[@]}" | sort -g | sed -n 2p)
    awk -v m="$model" -v sh="$shape" -v r="$roofline" -v p="$measured" -v s="$sim" -v t="$run" \
      -v all="${runs[*]}" 'BEGIN {printf "%-5s %-7s %13.3f %13.3f %13.3f %13.3f %13.2f %13.2f %13.2f   (runs: %s ms)\n", m, sh, r, p, s, t, t / r, t / p, t / s, all}'
  done
done
echo "(files in $out)"
