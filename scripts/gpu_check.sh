#!/usr/bin/env bash
# The checks only a GPU machine can run, as one short script for the device
# tool (docs/hetccl.md and docs/gpu.md, "What only a GPU run verifies"). It
# runs programs built on the development machine (x86-64, carried with the
# working tree: `carry: ["build/bin/hetccl-device-test",
# "build/lib/libhetccl.so", "build/lib/libhetrt.so", "build/gpu-check"]`,
# about 30 MiB): hetccl's device tests, which need only the driver
# and CUDA runtime, then het's GPU executables of the MLP, CNN and GPT, 20
# steps each against the x86 build's trace (<= 1e-4), which also need
# libhetrt's run-time libraries there (setup.sh --runtime's packages).
#
#   bash scripts/gpu_check.sh --prepare  # here: build/gpu-check
#   bash scripts/gpu_check.sh            # on the GPU machine
#
# Fails unless a CUDA device is present, every device test ran (a test that
# skips for want of a device is a failure here) and passed, and every
# executable trained matching its x86 trace.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# --prepare (on the development machine): het's GPU executables and the x86
# traces they must match, into build/gpu-check (carry it with build/lib).
if [ "${1:-}" = "--prepare" ]; then
  dir="$here/build/gpu-check"
  mkdir -p "$dir"
  for model in mlp cnn gpt; do
    options=()
    [ "$model" = gpt ] && options=(--optimizer adam --lr 0.01)
    for arch in sm_80 sm_90; do
      "$here/build/bin/het-compile" "$here/examples/models/$model.mlir" "${options[@]}" \
        --target=cuda --gpu-arch=$arch -o "$dir/$model.$arch"
    done
    "$here/build/bin/het-compile" "$here/examples/models/$model.mlir" "${options[@]}" -o "$dir/$model.x86"
    "$dir/$model.x86" --steps 20 --seed 2 > "$dir/$model.x86.txt"
  done
  echo "gpu_check: prepared $(ls "$dir" | wc -l) files in $dir"
  exit 0
fi
out="${OUT:-$(mktemp -d)}"
export LD_LIBRARY_PATH="$here/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

echo "== hetccl device kinds (test/ccl/DeviceTest.cpp)"
"$here/build/bin/hetccl-device-test" --gtest_filter='Devices.*' --gtest_output="xml:$out/device-test.xml" \
  2>&1 | tee "$out/device-test.log"
if grep -q '\[  SKIPPED \]' "$out/device-test.log"; then
  echo "gpu_check: a device test skipped on the GPU machine" >&2
  exit 1
fi
echo "gpu_check: all hetccl device checks ran and passed"

# --- het's own GPU executables (docs/gpu.md) --------------------------------
# Built on the development machine by `bash scripts/gpu_check.sh --prepare`
# (into build/gpu-check: each example for sm_80 and sm_90, and the x86
# build's 20-step trace to compare with); they need libhetrt's run-time
# libraries on the GPU machine (scripts/setup.sh --runtime's packages).
echo "== het GPU executables (build/gpu-check)"
missing=$(ldd "$here/build/lib/libhetrt.so" | grep 'not found' || true)
if [ -n "$missing" ]; then
  echo "gpu_check: libhetrt cannot load here (install scripts/setup.sh --runtime's packages):" >&2
  echo "$missing" >&2
  exit 1
fi
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
arch=sm_90
[ "${cap:-90}" -lt 90 ] && arch=sm_80
for model in mlp cnn gpt; do
  exe="$here/build/gpu-check/$model.$arch"
  "$exe" --steps 20 --seed 2 > "$out/$model.gpu.txt" 2> "$out/$model.gpu.err" \
    || { cat "$out/$model.gpu.err"; echo "gpu_check: $model on the GPU failed" >&2; exit 1; }
  echo "$model ($arch): $(sed -n 2p "$out/$model.gpu.txt"); $(python3 "$here/test/het-compile/Inputs/compare_traces.py" \
    "$here/build/gpu-check/$model.x86.txt" "$out/$model.gpu.txt" --tolerance 1e-4); $(grep throughput "$out/$model.gpu.txt")"
done
echo "gpu_check: all GPU checks ran and passed"
