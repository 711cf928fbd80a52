#!/usr/bin/env bash
# Two het-run instances form one 4-rank job, as two machines would (each
# launched by mpirun/srun/Kubernetes with --world-size/--rank-offset/--root):
# ranks 0-1 claim host "node-a", ranks 2-3 "node-b", so hetccl connects the
# two halves over TCP. usage: two_launchers.sh OUT_DIR EXECUTABLE ARGS...
set -euo pipefail
out="$1"; shift
# A port below the ephemeral range, where no connect() can take it first.
port=$(PYTHONPATH="$(dirname "$0")/../../python/distributed" python3 -c 'from launch import free_port; print(free_port())')
export HETCCL_TOKEN=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
HETCCL_HOST=node-a het-run -n 2 --world-size 4 --rank-offset 0 --root "127.0.0.1:$port" \
  --timeout-ms 20000 --job-timeout-s 120 "$@" > "$out/node-a.out" 2>&1 &
first=$!
status=0
HETCCL_HOST=node-b het-run -n 2 --world-size 4 --rank-offset 2 --root "127.0.0.1:$port" \
  --timeout-ms 20000 --job-timeout-s 120 "$@" > "$out/node-b.out" 2>&1 || status=$?
wait "$first" || status=$?
exit "$status"
