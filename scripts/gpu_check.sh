#!/usr/bin/env bash
# The checks only a GPU machine can run, as one short script for the device
# tool (docs/hetccl.md, "What only a GPU run verifies"). It runs programs
# built on the development machine (x86-64, carried with the working tree:
# `carry: ["build/bin/hetccl-device-test", "build/lib/libhetccl.so"]`), so
# the GPU machine needs only its driver and CUDA runtime.
#
#   bash scripts/gpu_check.sh            # from the repository root
#
# Fails unless a CUDA device is present and every device test ran (a test
# that skips for want of a device is a failure here) and passed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
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
echo "gpu_check: all device checks ran and passed"
