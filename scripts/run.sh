#!/usr/bin/env bash
# The main job on the built-in default: the MLP example model on the default
# cluster. Installs and builds what is missing, then runs every stage of the
# chain and says what it did: the IR stages, the training step (het-autodiff
# + het-fuse) trained for 50 steps by the reference evaluator, the plan for
# the mixed A100+MI250X node (het-plan), the partitioned step
# (het-partition) and simulated with failures (het-sim), that plan compiled
# (its GPU stages' kernels emulated on this host) and run by het-run, plans for time, cost
# and energy on a cloud mix, hetccl tuned by het-tune, a native executable built by
# het-compile that trains the model, the model's dense-layer GEMM engines
# tuned by het-tune kernels, its generated kernels' register tilings tuned
# (het-tune kernels --library mlir), each layer profiled per device kind
# (het-tune stages), and the same model compiled for this machine's two CPU
# device kinds (het-compile --cluster --plan auto: measured kinds, the
# planner's choice of stages, replicas, shares and tensor parallelism), run
# by het-run --elastic as one multi-rank job that loses one kind of device,
# re-plans for the rest, resuming from resharded checkpoints, and goes back
# to its first plan when the devices are re-admitted (het-run --admit);
# one rank of yet another plan then resumes from those checkpoints too;
# then a transformers Llama imported from PyTorch and
# checked against it step by step; a transformers GPT-2 trained across both
# kinds on a token file of real text prepared here, beside PyTorch
# (examples/llm/flagship.py); then GPU code: the GPT's kernels as a
# cubin and emulated on the host, and a CNN executable for NVIDIA GPUs. NPU
# pipeline stages are not compiled yet.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
model="${1:-$here/examples/models/mlp.mlir}"
bash "$here/scripts/setup.sh" >/dev/null
bash "$here/scripts/build.sh" >/dev/null
opt="$here/build/bin/het-opt"
out="$(mktemp -d)"
echo "het: model $model"
"$opt" "$model" --het-infer-layers --canonicalize --cse -o "$out/model.mlir"
ops=$(grep -cE '= het\.' "$out/model.mlir" || true)
layers=$(grep -oE 'het\.layer = [0-9]+' "$out/model.mlir" | sort -u | wc -l)
params=$(grep -o 'het.param' "$out/model.mlir" | wc -l)
echo "het: parsed and verified $ops het ops in $layers layers with $params trainable parameters"
echo "het: ran het-infer-layers, canonicalize, cse -> $out/model.mlir"
"$opt" "$out/model.mlir" --het-training-pipeline="optimizer=sgd learning-rate=0.1" \
  -o "$out/train.mlir"
fused=$(grep -cE 'het\.(batch_norm_relu|elementwise)|activation = #het.activation' "$out/train.mlir" || true)
echo "het: built the training step (het-autodiff, het-fuse: $fused fused ops) -> $out/train.mlir"
echo "het: 50 SGD steps in the reference evaluator (seeded data and initialization):"
"$here/build/bin/het-eval" "$out/train.mlir" --random-inputs 1 --steps 50 > "$out/trace.txt"
sed -n '1p;10p;20p;30p;40p;50p' "$out/trace.txt" | sed 's/^/het:   /'
cluster="$here/examples/clusters/mixed-node.json"
"$here/build/bin/het-plan" --cluster "$cluster" --model "$out/train.mlir" \
  --write-plan "$out/plan.json" > "$out/plan.txt"
echo "het: het-plan on $(basename "$cluster") (4 A100 + 4 MI250X):"
sed -n '1,2p;/^plan 1/,/^$/p;/^compared with/,$p' "$out/plan.txt" | sed 's/^/het:   /'
"$opt" "$out/train.mlir" --het-partition="plan=$out/plan.json" -o "$out/partitioned.mlir"
stages=$(grep -c 'het.stage @' "$out/partitioned.mlir")
collectives=$(grep -cE 'het\.(all_reduce|all_gather|reduce_scatter|broadcast|all_to_all)' "$out/partitioned.mlir")
echo "het: het-partition: $stages stages, $collectives gradient all-reduces -> $out/partitioned.mlir"
# het-sim: the same plan over 1000 iterations (noise, stragglers, queued
# sends) and a month of failures and checkpoints.
"$here/build/bin/het-sim" --cluster "$cluster" --model "$out/train.mlir" --plan "$out/plan.json" \
  --failures > "$out/sim.txt"
echo "het: het-sim of that plan:"
sed -n '2,$p' "$out/sim.txt" | sed 's/^/het:   /'
# The plan compiled: each stage for its group's GPU architecture, the
# kernels emulated on this host (no GPU here; without --gpu-emulate the
# same command builds the code objects for the GPUs), run as one job.
"$here/build/bin/het-compile" "$model" --lr 0.1 --plan "$out/plan.json" --gpu-emulate \
  -o "$out/planned" 2> "$out/planned-compile.txt" \
  || { cat "$out/planned-compile.txt"; echo "het: het-compile of the plan failed" >&2; exit 1; }
# One rank per device the plan uses (docs/planner.md: a stage's replicas on
# one group, or replica_groups over several, times its tensor parallelism).
ranks=$(python3 -c "
import json, sys
plan = json.load(open(sys.argv[1]))
print(sum(sum(g['replicas'] for g in s.get('replica_groups', [s])) * s.get('tensor_parallel', 1)
          for s in plan['stages']))" "$out/plan.json")
echo "het: het-compile --plan (GPU kernels emulated on this host) and het-run -n $ranks, 20 steps:"
"$here/build/bin/het-run" -n "$ranks" --timeout-ms 60000 "$out/planned" --steps 20 --print-every 10 \
  > "$out/planned.txt" 2> "$out/planned-run.txt" \
  || { cat "$out/planned-run.txt" "$out/planned.txt"; echo "het: the planned pipeline failed" >&2; exit 1; }
grep -E 'rank [0-9]+: stage|step [0-9]+ loss' "$out/planned.txt" | sort -V | sed 's/^/het:   /'
# Objectives: OPT-350 on a cloud mix (on-demand H100, spot RTX 4090 and
# L40S): the fastest plan, the cheapest one, the least-energy one.
echo "het: het-plan --objective time|cost|energy on spot-mix.json (OPT-350, catalog prices):"
for objective in time cost energy; do
  "$here/build/bin/het-plan" --cluster "$here/examples/clusters/spot-mix.json" \
    --model "$here/examples/models/opt-350.json" --global-batch 256 --top 1 \
    --objective "$objective" > "$out/objective-$objective.txt"
  echo "het:   $objective: $(grep -m1 '^plan 1' "$out/objective-$objective.txt" | cut -d, -f1 | sed 's/^plan 1: //')," \
    "$(grep -m1 'devices, USD' "$out/objective-$objective.txt" | sed 's/^ *//')"
done
# Per-stage clocks on the 1024-device six-vendor GPT-3 plan: the stages
# that wait for the bottleneck run slower, at most 1% off the iteration.
"$here/build/bin/het-plan" --cluster "$here/examples/clusters/six-vendor-1024.json" \
  --model "$here/examples/models/gpt3-175b.json" --global-batch 1536 --top 1 \
  --frequency-scaling > "$out/frequency.txt"
echo "het: six-vendor GPT-3 plan, $(grep -m1 '^frequency scaling' "$out/frequency.txt")"
if [ -x "$here/build/bin/hetccl-bench" ]; then
  # het-tune times every all-reduce algorithm at three sizes on this host and
  # records the fastest in a tuning database; hetccl's auto then reads it.
  echo "het: het-tune collectives: every all-reduce algorithm timed on 2 local ranks:"
  "$here/build/bin/het-tune" collectives -np 2 --sizes 1K,32K,1M --rounds 2 \
    --db "$out/tune.db" > "$out/tune.txt" 2>&1 \
    || { cat "$out/tune.txt"; echo "het: het-tune failed" >&2; exit 1; }
  grep -E ' -> |records written' "$out/tune.txt" | sed -E 's/^ +/het:   /; s/^([0-9])/het:   \1/'
  echo "het: hetccl all-reduce across 2 local ranks (sum, f32), auto as tuned (last column):"
  HETCCL_TUNING_DB="$out/tune.db" "$here/build/bin/hetccl-bench" -np 2 -b 1K -e 1M -f 32 -n 5 -w 1 \
    > "$out/hetccl.txt" 2>&1 \
    || { cat "$out/hetccl.txt"; echo "het: hetccl-bench failed" >&2; exit 1; }
  tail -n 6 "$out/hetccl.txt"
fi
# Native code: het-compile lowers the same step to an x86_64 executable
# (oneDNN kernels + generated loops) that trains on the real digits set when
# the model is the default MLP, else on its synthetic batch.
"$here/build/bin/het-compile" "$model" --lr 0.1 -o "$out/model" --time 2> "$out/compile.txt"
echo "het: het-compile built a native training executable in" \
     "$(awk '{s += $(NF-1)} END {printf "%.2f", s}' "$out/compile.txt") s -> $out/model"
data="$here/build/data"
if [ "$model" = "$here/examples/models/mlp.mlir" ] && [ -f "$data/digits_train.npz" ]; then
  echo "het: native training on scikit-learn's 8x8 digits (1437 train / 360 test images):"
  # One thread: this model is small, and OpenMP threads only wait on a busy host.
  "$out/model" --steps 2000 --print-every 500 --threads 1 --data "$data/digits_train.npz" \
    --eval "$data/digits_test.npz" | sed 's/^/het:   /'
else
  echo "het: native training, 50 steps on the synthetic batch:"
  "$out/model" --steps 50 --print-every 10 --seed 1 --threads 1 | sed 's/^/het:   /'
fi
# Mixed precision and memory (docs/precision.md, docs/memory.md): the
# example GPT (Adam) trained in f32, in bf16 (PyTorch's autocast policy,
# f32 master weights), and in f32 with full activation recomputation,
# whose loss trace must equal the f32 one to the bit while its buffers'
# peak falls.
echo "het: mixed precision and activation recomputation, the example GPT (Adam), 20 steps each:"
gpt="$here/examples/models/gpt.mlir"
for variant in "f32:f32:" "bf16:bf16:--precision bf16" "full:f32, --recompute full:--recompute full"; do
  tag=${variant%%:*} rest=${variant#*:}
  name=${rest%%:*} flags=${rest#*:}
  # shellcheck disable=SC2086
  "$here/build/bin/het-compile" "$gpt" --optimizer adam --lr 0.01 $flags -o "$out/gpt-$tag" \
    > "$out/gpt-$tag.compile.txt" 2>&1 \
    || { cat "$out/gpt-$tag.compile.txt"; echo "het: het-compile of the GPT ($name) failed" >&2; exit 1; }
  "$out/gpt-$tag" --steps 20 --print-every 19 --seed 2 --threads 1 > "$out/gpt-$tag.txt" \
    || { cat "$out/gpt-$tag.txt"; echo "het: the GPT ($name) failed" >&2; exit 1; }
  echo "het:   $name: $(grep '^step 19 loss' "$out/gpt-$tag.txt"); $(grep '^memory:' "$out/gpt-$tag.txt")"
done
if ! cmp -s <(grep '^step' "$out/gpt-f32.txt") <(grep '^step' "$out/gpt-full.txt"); then
  echo "het: recomputation changed the GPT's loss trace" >&2
  exit 1
fi
echo "het:   recomputation: the same losses to the bit; $(grep -o 'keeps .*' "$out/gpt-full.compile.txt")"
# Kernel tuning: het-tune times each matrix product of the model's dense
# layers on oneDNN and on OpenBLAS and records the faster per product (in
# the database that holds the collective records); het-compile --tuning-db
# builds the executable with that choice, fixed at compile time.
echo "het: het-tune kernels: each dense layer's matrix products timed on oneDNN and OpenBLAS:"
"$here/build/bin/het-tune" kernels "$model" --db "$out/tune.db" --rounds 3 > "$out/kernels.txt" 2>&1 \
  || { cat "$out/kernels.txt"; echo "het: het-tune kernels failed" >&2; exit 1; }
sed 's/^/het:   /' "$out/kernels.txt"
"$here/build/bin/het-compile" "$model" --lr 0.1 --tuning-db "$out/tune.db" -o "$out/model-tuned" \
  2> "$out/compile-tuned.txt" \
  || { cat "$out/compile-tuned.txt"; echo "het: het-compile --tuning-db failed" >&2; exit 1; }
sed 's/^/het:   /' "$out/compile-tuned.txt"
echo "het:   the tuned executable, 50 steps on the synthetic batch:"
"$out/model-tuned" --steps 50 --print-every 25 --seed 1 --threads 1 | sed 's/^/het:     /'
# Generated kernels (--library=mlir, the cpu.mlir kind) tuned: het-tune
# times every register tiling of each distinct contraction (each checked
# bit for bit against the untiled loops) and records the fastest;
# het-compile --tuning-db tiles each as recorded. Same results, faster.
echo "het: het-tune kernels --library mlir: register tilings of the generated contractions:"
"$here/build/bin/het-tune" kernels "$model" --library mlir --db "$out/tune.db" --rounds 2 \
  > "$out/kernels-mlir.txt" 2>&1 \
  || { cat "$out/kernels-mlir.txt"; echo "het: het-tune kernels --library mlir failed" >&2; exit 1; }
grep -E '^contraction|best|records written' "$out/kernels-mlir.txt" | sed -E 's/^ +//; s/^/het:   /'
"$here/build/bin/het-compile" "$model" --lr 0.1 --library=mlir -o "$out/model-mlir" \
  || { echo "het: het-compile --library=mlir failed" >&2; exit 1; }
"$here/build/bin/het-compile" "$model" --lr 0.1 --library=mlir --tuning-db "$out/tune.db" \
  -o "$out/model-mlir-tuned" 2> "$out/compile-mlir-tuned.txt" \
  || { cat "$out/compile-mlir-tuned.txt"; echo "het: het-compile --library=mlir --tuning-db failed" >&2; exit 1; }
sed 's/^/het:   /' "$out/compile-mlir-tuned.txt"
for build in model-mlir model-mlir-tuned; do
  echo "het:   $build, 200 steps on one thread: $("$out/$build" --steps 200 --print-every 200 --seed 1 --threads 1 | grep -E '^step 199|throughput' | tr '\n' ' ')"
done
# The same model as one job on several ranks of two kinds of device: this
# machine's CPUs as cpu.onednn (oneDNN kernels) and cpu.mlir (MLIR-generated
# kernels), two ranks each. het-compile measures each kind's speed on the
# model and plans (pipeline stages, replicas per stage, stages whose
# replicas are of both kinds with shares by speed, tensor parallelism) and
# builds one executable; het-run --elastic starts a rank per device,
# loses the cpu.mlir devices at step 150, re-plans for the rest and resumes
# from the newest checkpoint, resharded; when the devices are re-admitted
# the job stops after a checkpoint and resumes under its first plan; one rank of
# another plan then resumes from those checkpoints. The plan is priced by het-tune stages'
# measurements of this host.
two_kinds="$here/examples/clusters/local-two-kinds.json"
# Stage profiles: each layer timed on each kind at several micro-batch
# sizes, and messages between the four ranks on this host; the planner
# prices the plan by them instead of its roofline.
echo "het: het-tune stages: each layer on each kind of $(basename "$two_kinds"), messages between its ranks:"
"$here/build/bin/het-tune" stages "$model" --cluster "$two_kinds" --db "$out/tune.db" \
  > "$out/stages.txt" 2>&1 \
  || { cat "$out/stages.txt"; echo "het: het-tune stages failed" >&2; exit 1; }
grep -E 'micro-batch (1|32):|messages|records written' "$out/stages.txt" | sed 's/^/het:   /'
echo "het: het-compile --cluster $(basename "$two_kinds") --plan auto --tuning-db (2 cpu.onednn + 2 cpu.mlir ranks):"
"$here/build/bin/het-compile" "$model" --lr 0.1 --cluster "$two_kinds" --plan auto \
  --tuning-db "$out/tune.db" --micro-batches 2 -o "$out/pipeline" 2> "$out/pipeline-compile.txt" \
  || { cat "$out/pipeline-compile.txt"; echo "het: het-compile --cluster failed" >&2; exit 1; }
sed 's/^/het:   /' "$out/pipeline-compile.txt"
pipeline_data=()
if [ "$model" = "$here/examples/models/mlp.mlir" ] && [ -f "$data/digits_train.npz" ]; then
  pipeline_data=(--data "$data/digits_train.npz")
fi
# The ranks the plan uses: replicas x tensor-parallel devices of each stage.
ranks=$("$here/.venv/bin/python" -c '
import json, sys
plan = json.load(open(sys.argv[1]))
print(sum(g["replicas"] * s.get("tensor_parallel", 1)
          for s in plan["stages"] for g in s.get("replica_groups", [s])))' "$out/pipeline.plan.json")
# het-run --cluster starts one rank per device, group by group: the
# cpu.mlir devices are the last two ranks. Both are SIGKILLed at step 150;
# het-run --elastic re-plans for the cpu.onednn devices left, recompiles,
# and the survivors resume from the resharded checkpoint.
devices=$(python3 -c 'import json, sys
print(sum(d["count"] for n in json.load(open(sys.argv[1]))["nodes"] for d in n["devices"]))' "$two_kinds")
mlir_ranks="$((devices - 2)),$((devices - 1))"
echo "het: het-run --elastic: pipelined training ($ranks ranks) with async checkpoints; ranks $mlir_ranks (cpu.mlir) are SIGKILLed at step 150, and their devices come back while het-run re-plans:"
"$here/build/bin/het-run" --cluster "$two_kinds" --elastic --fail-wait-ms 3000 --timeout-ms 10000 \
  --metrics-log "$out/metrics.jsonl" --metrics-port 0 --metrics-address 127.0.0.1 --token-file "$out/job.token" \
  "$out/pipeline" --steps 300 --print-every 50 "${pipeline_data[@]}" \
  --checkpoint-dir "$out/checkpoints" --checkpoint-every 20 --kill-rank "$mlir_ranks" --kill-step 150 \
  > "$out/het-run.txt" 2>&1 &
job=$!
# While het-run re-plans for the survivors, the cpu.mlir devices come back
# (what a node agent would tell het-run): het-run --admit, signed with the
# job token het-run wrote to job.token (only this user can read it). The survivors'
# attempt starts with the stop already asked (het-run holds the request
# until a rank can take it), trains to its first checkpoint and stops; the
# job goes back to its first plan. Admitting at the re-plan line, not
# later, makes that order certain: a later admission could find the
# survivors done. Every part announced above must happen, or the main job
# fails saying which did not.
admitted=""
while kill -0 "$job" 2>/dev/null; do
  if [ -z "$admitted" ] && grep -q 'het-run: elastic: lost .* re-planning for the' "$out/het-run.txt"; then
    port=$(sed -n 's|.*metrics at http://127\.0\.0\.1:\([0-9]*\)/metrics.*|\1|p' "$out/het-run.txt")
    if ! "$here/build/bin/het-run" --admit "127.0.0.1:$port" --group mlir --token-file "$out/job.token" \
        > "$out/admit.txt" 2>&1; then
      kill "$job" 2>/dev/null || true
      wait "$job" 2>/dev/null || true
      cat "$out/het-run.txt" "$out/admit.txt"
      echo "het: het-run --admit failed; the main job stops here" >&2
      exit 1
    fi
    admitted=1
  fi
  sleep 0.05
done
wait "$job" || { cat "$out/het-run.txt"; echo "het: het-run failed" >&2; exit 1; }
# Every rank of an attempt says "resumed", "stopped" and "checkpoint stall";
# show the first rank's line of each per attempt. The first rank that
# trains is not always rank 0: the plan het-compile picks from this host's
# measurements may leave the cpu.onednn ranks idle.
per_attempt_once() {
  awk '/het-run: attempt [0-9]+: starting/ { delete seen }
       match($0, /^\[rank [0-9]+\] (resumed|stopped|checkpoint stall)/) {
         kind = $3; if (kind in seen) next; seen[kind] = 1 }
       { print }'
}
grep -E 'het-run:|\] rank [0-9]:|SIGKILL|resumed|stopped|step [0-9]+ loss|iteration time|predicted|checkpoint stall' \
  "$out/het-run.txt" | per_attempt_once | sed 's/^/het:   /'
expect() { # expect WHAT PATTERN: the job's output must show WHAT happened
  grep -qE "$2" "$out/het-run.txt" \
    || { echo "het: the elastic job did not $1 (no line matching '$2' in $out/het-run.txt)" >&2; exit 1; }
}
expect "lose the cpu.mlir ranks and re-plan" 'het-run: elastic: lost rank .* re-planning for the 2 devices left'
[ -n "$admitted" ] || { echo "het: het-run never re-planned, so the devices were never re-admitted" >&2; exit 1; }
expect "resume the survivors from a resharded checkpoint" 'het-run: elastic: restarting on 2 ranks .* from the newest checkpoint \(resharded'
expect "stop the survivors for the re-admitted devices" 'het-run: elastic: the ranks stopped after the checkpoint of step [0-9]+ for the re-admitted devices \(mlir x2\)'
expect "go back to its first plan on every device" "het-run: attempt 2: starting $devices ranks"
# Attempts 1 (the survivors' plan) and 2 (the first plan again) each resume
# from a checkpoint another plan wrote: some rank of each says "resharded".
resharded_attempts=$(awk '/het-run: attempt [0-9]+: starting/ { attempt = $3 }
  /^\[rank [0-9]+\] resumed from step [0-9]+ \(resharded/ { seen[attempt] = 1 }
  END { print (("1:" in seen) && ("2:" in seen)) ? "both" : "not both" }' "$out/het-run.txt")
[ "$resharded_attempts" = both ] \
  || { echo "het: attempts 1 and 2 did not both resume from resharded checkpoints (survivors, then the first plan)" >&2; exit 1; }
expect "finish" "het-run: all $devices ranks finished"
echo "het:   (while het-run re-planned) het-run --admit 127.0.0.1:$port --group mlir --token-file job.token: $(cat "$out/admit.txt")"
echo "het:   per-step metrics of every rank (het-run --metrics-log): $(grep -c '"step"' "$out/metrics.jsonl") lines in $out/metrics.jsonl"
# Judged by the decision: the plan --plan auto chose against the others
# het-plan lists for the same model, cluster, database and global batch,
# each compiled and run (bench/plan/decisions.py; docs/planner.md has the
# full benchmark).
read -r global_batch < <("$here/.venv/bin/python" -c '
import json, sys
print(json.load(open(sys.argv[1]))["global_batch"])' "$out/pipeline.plan.json")
echo "het: the chosen plan against the 4 best het-plan lists (global batch $global_batch, at most 2 micro-batches; each run once, 150 steps):"
"$here/.venv/bin/python" "$here/bench/plan/decisions.py" --model-file "$model" --tuning-db "$out/tune.db" \
  --global-batch "$global_batch" --max-micro-batches 2 --top 4 --runs 1 --steps 150 --no-record \
  --record-plans --chosen "$out/pipeline.plan.json" > "$out/decisions.txt" 2>&1 \
  || { cat "$out/decisions.txt"; echo "het: bench/plan/decisions.py failed" >&2; exit 1; }
grep -v '^#\|^$' "$out/decisions.txt" | sed 's/^/het:   /'
# Measured feedback: each of those runs recorded its iteration time under
# its plan's key (het-run --tuning-db); planning again ranks the plans that
# ran by what they measured, the others by their prediction scaled by how
# far the measured ones were off (docs/planner.md).
echo "het: het-compile --plan auto --tuning-db again: the plans that ran, ranked by what they measured:"
"$here/build/bin/het-compile" "$model" --lr 0.1 --cluster "$two_kinds" --plan auto \
  --tuning-db "$out/tune.db" --micro-batches 2 -o "$out/pipeline-measured" \
  2> "$out/pipeline-measured-compile.txt" \
  || { cat "$out/pipeline-measured-compile.txt"; echo "het: het-compile --plan auto (measured) failed" >&2; exit 1; }
grep -E '^(candidate [0-9]+: measured|ranked |stage s[0-9]+:)' "$out/pipeline-measured-compile.txt" | sed 's/^/het:   /'
grep -q '^ranked ' "$out/pipeline-measured-compile.txt" \
  || { echo "het: the second --plan auto found none of the measured plans in $out/tune.db" >&2; exit 1; }

# The same checkpoints under another plan: one rank of the cpu.onednn kind
# takes the whole model, reads each layer's state from the ranks that
# wrote it and trains on from the pipeline's last step.
layers=$("$here/build/bin/het-plan" --model "$model" --cluster "$two_kinds" --show-model \
  | sed -n 's/^model [^:]*: \([0-9]*\) layers.*/\1/p')
read -r global micro < <("$here/.venv/bin/python" -c '
import json, sys
plan = json.load(open(sys.argv[1]))
print(plan["global_batch"], plan["micro_batches"])' "$out/pipeline.plan.json")
"$here/.venv/bin/python" "$here/utils/make_plan.py" "$two_kinds" "$out/one-rank.plan.json" \
  --global-batch "$global" --micro-batches "$micro" --stage "0:$layers=onednn:1"
"$here/build/bin/het-compile" "$model" --lr 0.1 --plan "$out/one-rank.plan.json" \
  -o "$out/one-rank" 2> "$out/one-rank-compile.txt" \
  || { cat "$out/one-rank-compile.txt"; echo "het: het-compile of the one-rank plan failed" >&2; exit 1; }
echo "het: the pipeline's checkpoints resumed under another plan (all layers on one cpu.onednn rank), 40 more steps:"
"$out/one-rank" --steps 340 --print-every 20 "${pipeline_data[@]}" --checkpoint-dir "$out/checkpoints" \
  > "$out/one-rank.txt" 2>&1 \
  || { cat "$out/one-rank.txt"; echo "het: resuming under another plan failed" >&2; exit 1; }
grep -E 'resumed|step [0-9]+ loss' "$out/one-rank.txt" | sed 's/^/het:   /'
# The models users bring: transformers' LlamaForCausalLM (tiny config,
# random weights, nothing downloaded) imported from PyTorch, trained 20 steps
# in het and compared step by step with PyTorch.
echo "het: python -m het.export examples/torch/hf_tiny.py:llama (transformers LlamaForCausalLM: RMSNorm, rotary, GQA, SwiGLU) --train-steps 20 --check:"
HET_TOOLS_DIR="$here/build/bin" PYTHONPATH="$here/python" "$here/.venv/bin/python" -m het.export \
  "$here/examples/torch/hf_tiny.py:llama" --input-shape 4,16 --input-dtype int64 \
  -o "$out/llama.mlir" --train-steps 20 --check > "$out/llama.txt" 2>&1 \
  || { cat "$out/llama.txt"; echo "het: het.export failed" >&2; exit 1; }
echo "het:   $(grep -c 'het.rms_norm' "$out/llama.mlir") het.rms_norm, $(grep -cE '= het\.' "$out/llama.mlir") het ops -> $out/llama.mlir"
grep -E '^step (0|19) |^max relative' "$out/llama.txt" | sed 's/^/het:   /'
# A language model on real text (docs/llm.md): a byte-level BPE trained here
# on two packages of the Python standard library's sources and their token
# file.
sources=$("$here/.venv/bin/python" -c 'import email, json, os; print(os.path.dirname(json.__file__), os.path.dirname(email.__file__))')
echo "het: python -m het.data prepare (Python's json and email sources, byte-level BPE of 512):"
PYTHONPATH="$here/python" "$here/.venv/bin/python" -m het.data prepare $sources --out "$out/corpus" \
  --vocab-size 512 > "$out/prepare.txt" 2>&1 \
  || { cat "$out/prepare.txt"; echo "het: het.data prepare failed" >&2; exit 1; }
sed 's/^het.data prepare: /het:   /' "$out/prepare.txt"
# The flagship run (examples/llm/flagship.py): a transformers GPT-2 imported
# with het.export, planned over both local kinds with AdamW, clipping and a
# cosine schedule, trained with validation and checkpoints, beside PyTorch
# training the same module on the same windows (loss.png), and text decoded
# from what it learned, checked against transformers.
echo "het: examples/llm/flagship.py: a transformers GPT-2 (2 layers, vocabulary 512, windows of 32) planned over $(basename "$two_kinds") and trained on $out/corpus/train.bin, 300 steps, beside PyTorch:"
"$here/.venv/bin/python" "$here/examples/llm/flagship.py" --corpus "$out/corpus" --out "$out/flagship" \
  --cluster "$two_kinds" --steps 300 > "$out/flagship.txt" 2>&1 \
  || { cat "$out/flagship.txt"; echo "het: the flagship run failed" >&2; exit 1; }
sed 's/^flagship: /het:   /' "$out/flagship.txt"
# Real text is learnable: the loss must fall well below its start (ln 512).
"$here/.venv/bin/python" - "$out/flagship/summary.json" <<'PY' || exit 1
import json, sys
s = json.load(open(sys.argv[1]))
if s["het_final_loss"] > 0.8 * 6.238:
    sys.exit(f"het: the language model's loss did not fall by a fifth: {s['het_final_loss']}")
PY
# GPU code objects (docs/gpu.md; no GPU here): the GPT's training step as
# one sm_90 cubin, checked with llvm-readelf, and the same mapped kernels
# emulated on the host against the x86 build.
if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ]; then
  gpt="$here/examples/models/gpt.mlir"
  echo "het: het-compile examples/models/gpt.mlir --target=cuda --gpu-arch=sm_90 --emit=gpu-binary:"
  "$here/build/bin/het-compile" "$gpt" --target=cuda --gpu-arch=sm_90 --optimizer adam --lr 0.01 \
    --emit=gpu-binary -o "$out/gpt.cubin" 2> "$out/gpu.txt" \
    || { cat "$out/gpu.txt"; echo "het: GPU compilation failed" >&2; exit 1; }
  readelf=/usr/lib/llvm-19/bin/llvm-readelf
  echo "het:   $out/gpt.cubin: $("$readelf" -h "$out/gpt.cubin" | sed -n 's/ *Machine: *//p'), $("$readelf" -s "$out/gpt.cubin" | grep -c 'FUNC    GLOBAL') kernels"
  "$here/build/bin/het-compile" "$gpt" --target=cuda --gpu-emulate --optimizer adam --lr 0.01 \
    -o "$out/gpt-emulated" 2>> "$out/gpu.txt" \
    && "$here/build/bin/het-compile" "$gpt" --optimizer adam --lr 0.01 -o "$out/gpt-x86" \
    && "$out/gpt-emulated" --steps 20 --seed 2 > "$out/gpt-emulated.txt" \
    && "$out/gpt-x86" --steps 20 --seed 2 > "$out/gpt-x86.txt" \
    || { cat "$out/gpu.txt"; echo "het: GPU emulation failed" >&2; exit 1; }
  echo "het:   the same kernels emulated on the host vs the x86 build, 20 Adam steps: $("$here/.venv/bin/python" \
    "$here/test/het-compile/Inputs/compare_traces.py" "$out/gpt-x86.txt" "$out/gpt-emulated.txt" --tolerance 1e-4)"
  # A GPU executable of the CNN (batch norm and pooling generated): its
  # launches go through libhetrt's GPU runtime layer, which opens the CUDA
  # driver at start; without one it stops with one line saying so.
  "$here/build/bin/het-compile" "$here/examples/models/cnn.mlir" --target=cuda --gpu-arch=sm_90 \
    -o "$out/cnn-cuda" 2>> "$out/gpu.txt" || { cat "$out/gpu.txt"; echo "het: GPU executable failed" >&2; exit 1; }
  echo "het: het-compile examples/models/cnn.mlir --target=cuda: a GPU executable," \
       "$(grep -c 'call void @mgpuLaunchKernel' < <("$here/build/bin/het-compile" "$here/examples/models/cnn.mlir" \
          --target=cuda --gpu-arch=sm_90 --emit=llvm -o - 2>/dev/null)) kernel launches in its step and predict"
  if "$out/cnn-cuda" --steps 20 > "$out/cnn-cuda.txt" 2>&1; then
    sed 's/^/het:   /' "$out/cnn-cuda.txt" | sed -n '1,2p;$p'
  else
    echo "het:   run here: $(tail -n 1 "$out/cnn-cuda.txt")"
  fi
fi
