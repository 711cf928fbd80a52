#!/usr/bin/env bash
# The install test (docs/install.md): installs het into a temporary prefix,
# moves the prefix elsewhere, and then, with the source and build trees
# hidden (a private mount namespace puts an empty tmpfs over the checkout,
# leaving only the Python virtual environment), runs the main job's steps
# from the moved tree, builds a hetccl consumer with find_package and
# pkg-config, and pip-installs the Python package into a fresh venv
# (relocated.sh). Before that, with the build tree still visible: the
# RUNPATHs and package files of the installed tree, the runtime package list
# against the libraries the tree needs, the .deb and .tar.gz packages, and
# the Dockerfile's lint.
#
#   test/install/check_install.sh [BUILD_DIR]     (CTest runs it: label install)
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$src/build}" && pwd)"
venv="$src/.venv"
tmp="$(mktemp -d /tmp/het-install-test.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
say() { echo "install-test: $*"; }
die() { echo "install-test: FAILED: $*" >&2; exit 1; }
trap 'echo "install-test: FAILED at $(basename "${BASH_SOURCE[0]}"):$LINENO: $BASH_COMMAND" >&2' ERR

# --- install, then move ------------------------------------------------------
cmake --install "$build" --prefix "$tmp/staged" > "$tmp/install.log"
mv "$tmp/staged" "$tmp/prefix"
prefix="$tmp/prefix"
say "installed into a prefix and moved it to $prefix ($(du -sh "$prefix" | cut -f1))"
for tool in het-opt het-eval het-plan het-compile het-run hetccl-bench het-tune; do
  [ -x "$prefix/bin/$tool" ] || die "bin/$tool was not installed"
done
for file in lib/libhetrt.so lib/libhetccl.so lib/libHetCheckpoint.a include/het-c/hetccl.h \
            include/het-c/hetccl_fault.h include/het-c/hetrt.h include/het/Checkpoint/Checkpointer.h \
            lib/cmake/hetccl/hetcclConfig.cmake lib/cmake/het/hetConfig.cmake \
            lib/pkgconfig/hetccl.pc share/het/devices/nvidia.json share/het/examples/models/mlp.mlir \
            share/het/examples/hetccl-consumer/allreduce.c lib/het/rocm-toolkit/llvm/bin/ld.lld \
            share/doc/het/README.md share/doc/het/install.md; do
  [ -e "$prefix/$file" ] || die "$file was not installed"
done

# --- nothing in the tree points back at the build, the source or the staging
# place: RUNPATHs are $ORIGIN-relative, package files relative to themselves.
for elf in "$prefix"/bin/* "$prefix"/lib/*.so; do
  runpath=$(readelf -d "$elf" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
  case "$runpath" in
    *"$src"*|*"$build"*|*"$tmp"*) die "$(basename "$elf") has RUNPATH $runpath (into the build tree)" ;;
    '$ORIGIN'*) ;;
    *) die "$(basename "$elf") has RUNPATH '$runpath', not \$ORIGIN-relative" ;;
  esac
done
if grep -rlF -e "$src" -e "$tmp" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  die "package files above name the build or staging tree"
fi
say "RUNPATHs are \$ORIGIN-relative; CMake and pkg-config files name no absolute path"

# --- scripts/setup.sh --runtime (the image's packages) covers every library
# the installed binaries load, and the .deb's Depends that dpkg-shlibdeps
# computes from them.
runtime=" $(bash "$src/scripts/setup.sh" --print-runtime-packages | tr '\n' ' ') "
for elf in "$prefix"/bin/* "$prefix"/lib/*.so; do
  readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u | while read -r soname; do
  case "$soname" in libhetrt.so|libhetccl.so) continue ;; esac
  # (awk reads to the end: an early exit would SIGPIPE the writer.)
  path=$(ldconfig -p | awk -v s="$soname" '$1 == s && !n++ {print $NF}')
  [ -n "$path" ] || path=$(ldd "$prefix/bin/het-compile" "$prefix/lib/libhetrt.so" \
                           | awk -v s="$soname" '$1 == s && !n++ {print $3}')
  [ -n "$path" ] || die "cannot find $soname on this system"
  package=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path")
  package=${package%%:*}
  [[ "$runtime" == *" $package "* ]] \
    || die "$soname comes from the package $package, which setup.sh --runtime does not install"
done
say "setup.sh --runtime installs the package of every library the tree links"

# --- packages: cpack -G DEB and TGZ ----------------------------------------
(cd "$build" && cpack -G "DEB;TGZ" -B "$tmp/packages" > "$tmp/cpack.log" 2>&1) \
  || { cat "$tmp/cpack.log"; die "cpack failed"; }
deb=$(ls "$tmp"/packages/het_*.deb)
tgz=$(ls "$tmp"/packages/het-*.tar.gz)
depends=$(dpkg-deb -f "$deb" Depends)
for package in $(echo "$depends" | tr ',' '\n' | sed 's/([^)]*)//g; s/|.*//; s/ //g'); do
  [[ "$runtime" == *" $package "* ]] \
    || die "the .deb depends on $package, which setup.sh --runtime does not install"
done
dpkg-deb -c "$deb" > "$tmp/deb-contents.txt"
grep -q '\./opt/het/bin/het-compile$' "$tmp/deb-contents.txt" || die "the .deb has no /opt/het/bin/het-compile"
mkdir "$tmp/unpacked" && tar -xzf "$tgz" -C "$tmp/unpacked"
unpacked=$(ls -d "$tmp"/unpacked/het-*)
"$unpacked/bin/het-opt" --version | grep -c "het" > /dev/null || die "het-opt from the .tar.gz does not run"
"$unpacked/bin/het-plan" --cluster "$unpacked/share/het/examples/clusters/mixed-node.json" \
  --model "$unpacked/share/het/examples/models/opt-350.json" > "$tmp/tgz-plan.txt" \
  || die "het-plan from the .tar.gz failed"
say "cpack: $(basename "$deb") ($(du -h "$deb" | cut -f1); Depends: $depends) and $(basename "$tgz"), which runs where it is unpacked"
rm -rf "$tmp/unpacked" "$tmp/packages"

# --- the Dockerfile: linted (no container engine here to build it) ---------
"$venv/bin/hadolint" "$src/Dockerfile" || die "hadolint finds problems in the Dockerfile"
grep -q 'setup.sh --runtime' "$src/Dockerfile" || die "the Dockerfile does not use setup.sh --runtime"
# Its build stage's configuration (Release, no tests: no GoogleTest or lit).
cmake -G Ninja -S "$src" -B "$tmp/image-build" -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DHET_ENABLE_TESTS=OFF > "$tmp/image-cmake.txt" 2>&1 \
  || { cat "$tmp/image-cmake.txt"; die "the Dockerfile's CMake configuration fails"; }
grep -q 'cmake -G Ninja -S . -B /tmp/build -DCMAKE_BUILD_TYPE=Release' "$src/Dockerfile" \
  || die "the Dockerfile's cmake line differs from the one checked here"
rm -rf "$tmp/image-build"
say "hadolint passes the Dockerfile; its CMake configuration succeeds (the image is not built: no container engine here)"

# --- what the relocated steps need from the checkout, copied out first -----
mkdir -p "$tmp/inputs"
cp "$src/test/install/relocated.sh" "$tmp/relocated.sh"
cp "$src/test/pipeline/Inputs/mlp-2x2.plan.json" "$tmp/inputs/"
"$venv/bin/python" "$src/scripts/make_digits.py" "$tmp/inputs" > /dev/null
# The Python package as a user's copy of the source would be: no build
# products, no editable-install metadata.
mkdir "$tmp/python-src"
(cd "$src/python" && tar --exclude=__pycache__ --exclude='*.egg-info' --exclude=build -cf - .) \
  | tar -xf - -C "$tmp/python-src"

# --- hide the checkout and run from the moved tree --------------------------
# The venv stays at its path (its scripts name it), bind-mounted back over
# the empty tmpfs; nothing else of the checkout or the build tree remains.
hide='
  set -e
  mkdir -p "$TMP/venv-mount"
  mount --bind "$SRC/.venv" "$TMP/venv-mount"
  mount -t tmpfs -o size=1m het-hidden "$SRC"
  mkdir "$SRC/.venv"
  mount --bind "$TMP/venv-mount" "$SRC/.venv"
  case "$BUILD" in "$SRC"/*) ;; *) mount -t tmpfs -o size=1m het-hidden "$BUILD" ;; esac
  exec bash "$TMP/relocated.sh"
'
if ! unshare --mount --propagation private true 2> "$tmp/unshare.txt"; then
  die "cannot make a private mount namespace to hide the build tree ($(cat "$tmp/unshare.txt")); \
the install test needs root (or CAP_SYS_ADMIN) for unshare --mount"
fi
env -i PATH="$prefix/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  HOME="$tmp" TMP="$tmp" SRC="$src" BUILD="$build" PREFIX="$prefix" VENV="$venv" \
  ${CUDA_HOME:+CUDA_HOME="$CUDA_HOME"} \
  unshare --mount --propagation private bash -c "$hide"
say "passed"
