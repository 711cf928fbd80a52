#!/usr/bin/env bash
# Installs every system and Python dependency het needs, idempotently.
# Run as root on a fresh Debian 12 machine. Safe to run again: apt and pip
# skip what is already present, and the venv is reused.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

APT_PACKAGES=(
  # build
  build-essential cmake ninja-build ccache git pkg-config
  # LLVM/MLIR 19 (Debian 12 packages); lit's FileCheck/not/count live in llvm-19-tools
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 lld-19
  # AMD GPU code objects: lld-19 links them, the device libraries (ocml, ockl)
  # supply their math (lib/Conversion/CMakeLists.txt arranges both as a ROCm
  # toolkit folder)
  rocm-device-libs
  # libraries
  libgtest-dev libgmock-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev zlib1g-dev libzstd-dev libzip-dev
  libssl-dev libdnnl-dev libgloo-dev libopenmpi-dev openmpi-bin
  # tests
  python3 python3-venv iproute2
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: system packages present"
fi

# Python tools (lit, numpy, pytest, torch) live in the project's own virtual environment so
# the system interpreter is left alone.
venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$here/scripts/requirements.txt"
# The het Python package (python/het), editable so the checkout is what runs.
if ! "$venv/bin/python" -c 'import het, os, sys; sys.exit(os.path.realpath(het.__file__) != os.path.realpath(sys.argv[1]))' \
    "$here/python/het/__init__.py" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e "$here/python"
fi
# A real data set for the compiled MLP: scikit-learn's bundled 8x8 digits as
# .npz train/test files (idempotent).
if [ ! -f "$here/build/data/digits_test.npz" ]; then
  "$venv/bin/python" "$here/scripts/make_digits.py" "$here/build/data"
fi
echo "setup: done"
