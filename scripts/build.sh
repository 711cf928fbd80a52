#!/usr/bin/env bash
# Configures (once) and builds het into build/. Reuses the existing build tree
# and ccache, so a second run only rebuilds what changed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
jobs="${HET_JOBS:-$(nproc)}"
if [ ! -f build/build.ninja ]; then
  cmake -G Ninja -S . -B build \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DHET_WERROR="${HET_WERROR:-ON}"
fi
ninja -C build -j "$jobs"
