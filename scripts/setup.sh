#!/usr/bin/env bash
# Installs every system and Python dependency het needs, idempotently.
# Run as root on a fresh Debian 12 machine. Safe to run again: apt and pip
# skip what is already present, and the venv is reused.
#
#   setup.sh            everything: build, test and Python dependencies
#   setup.sh --system   only the system packages that build het (no venv, no
#                       PyPI): the build stage of the Dockerfile
#   setup.sh --runtime  only what an installed het needs to run (its shared
#                       libraries and a compiler driver for het-compile's
#                       link): the Dockerfile's final image. Needs no other
#                       file of the checkout.
#   setup.sh --print-runtime-packages   the --runtime list, one per line
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-all}"
case "$mode" in
  all|--system|--runtime|--print-runtime-packages) ;;
  *) echo "setup: unknown option '$mode' (expected --system, --runtime or --print-runtime-packages)" >&2
     exit 2 ;;
esac

# What the installed tree (cmake --install) links at run time, by package:
# test/install/check_install.sh checks this list against the installed
# binaries' libraries and the .deb's computed Depends.
RUNTIME_APT_PACKAGES=(
  libc6 libstdc++6 libgcc-s1 libgomp1
  libllvm19 libmlir-19 libdnnl2 libzip4 libssl3
  # the tuning database (libhetccl reads HETCCL_TUNING_DB; het-tune writes it)
  libsqlite3-0
  # het-run's metrics endpoint (--metrics-port, --status)
  libcpp-httplib0.11
  # matrix products a tuning database chose OpenBLAS for (libhetrt opens its
  # OpenMP build with dlopen, sharing oneDNN's threads; docs/tuning.md)
  libopenblas0-openmp
  # het-compile links executables with the system's compiler driver
  gcc libc6-dev
  # AMD code objects (lib/het/rocm-toolkit links to both)
  lld-19 rocm-device-libs
)
if [ "$mode" = "--print-runtime-packages" ]; then
  printf '%s\n' "${RUNTIME_APT_PACKAGES[@]}"
  exit 0
fi

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
  libcpp-httplib-dev
  libssl-dev libdnnl-dev libgloo-dev libopenmpi-dev openmpi-bin
  # the second GEMM engine (dlopen'ed; see RUNTIME_APT_PACKAGES)
  libopenblas0-openmp
  # tests
  python3 python3-venv iproute2
)

if [ "$mode" = "--runtime" ]; then
  APT_PACKAGES=("${RUNTIME_APT_PACKAGES[@]}")
fi
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

if [ "$mode" != all ]; then
  echo "setup: done ($mode)"
  exit 0
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
