#!/usr/bin/env bash
# Configures (once) and builds het into build/. Reuses the existing build tree
# and ccache, so a second run only rebuilds what changed. setup.sh has put
# torch in .venv, so the torch.distributed backend is required here (ON): a
# broken torch is a configure error, not a silently missing test.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
jobs="${HET_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DHET_WERROR="${HET_WERROR:-ON}" \
    -DHET_TORCH_BACKEND="${HET_TORCH_BACKEND:-ON}"
fi
ninja -C build -j "$jobs"
