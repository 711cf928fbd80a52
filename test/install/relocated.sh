#!/usr/bin/env bash
# The second half of check_install.sh, run in a mount namespace where the
# checkout ($SRC) is an empty tmpfs except for its Python venv: everything
# here must come from the moved installation ($PREFIX). The environment has
# only PATH (with $PREFIX/bin first), HOME, and the variables below.
set -euo pipefail
say() { echo "install-test: $*"; }
die() { echo "install-test: FAILED: $*" >&2; exit 1; }
trap 'echo "install-test: FAILED at $(basename "${BASH_SOURCE[0]}"):$LINENO: $BASH_COMMAND" >&2' ERR
[ ! -e "$SRC/CMakeLists.txt" ] && [ ! -e "$BUILD/bin" ] || die "the checkout is still visible"
examples="$PREFIX/share/het/examples"
inputs="$TMP/inputs"
work="$TMP/work"
mkdir -p "$work" && cd "$work"
say "checkout hidden ($SRC holds only $(ls -A "$SRC")); running from $PREFIX"

# --- the main job's steps ----------------------------------------------------
het-opt --version | grep -c het > /dev/null || die "het-opt --version"
het-opt "$examples/models/mlp.mlir" --het-infer-layers --canonicalize --cse \
  --het-training-pipeline="optimizer=sgd learning-rate=0.1" -o train.mlir
het-eval train.mlir --random-inputs 1 --steps 5 > eval.txt
say "het-opt + het-eval: $(tail -n 1 eval.txt)"

het-compile "$examples/models/mlp.mlir" --lr 0.1 -o mlp
./mlp --steps 400 --print-every 400 --threads 1 --data "$inputs/digits_train.npz" \
  --eval "$inputs/digits_test.npz" > mlp.txt
accuracy=$(sed -n 's/^eval accuracy \([0-9.]*\).*/\1/p' mlp.txt)
awk -v a="$accuracy" 'BEGIN {exit !(a >= 0.85)}' || { cat mlp.txt; die "digits accuracy $accuracy < 0.85"; }
say "het-compile built the MLP against the moved libhetrt ($(readelf -d mlp | sed -n 's/.*RUNPATH.*\[\(.*\)\]/\1/p')); digits test accuracy $accuracy"

het-plan --cluster "$examples/clusters/mixed-node.json" --model train.mlir --write-plan plan.json > plan.txt
grep -q '^plan 1' plan.txt || die "het-plan printed no plan"
say "het-plan found the device catalog in the moved tree: $(sed -n 's/^plan 1: //p' plan.txt)"

het-compile "$examples/models/mlp.mlir" --lr 0.1 --cluster "$examples/clusters/local-two-kinds.json" \
  --plan auto --micro-batches 2 -o auto 2> auto.txt || { cat auto.txt; die "het-compile --plan auto"; }
het-compile "$examples/models/mlp.mlir" --lr 0.1 --plan "$inputs/mlp-2x2.plan.json" \
  --micro-batches 2 -o pipeline
het-run -n 4 --timeout-ms 20000 --max-restarts 1 ./pipeline --steps 40 --print-every 20 \
  --data "$inputs/digits_train.npz" --checkpoint-dir ckpt --checkpoint-every 10 \
  --kill-rank 3 --kill-step 25 > run.txt 2>&1 || { cat run.txt; die "het-run of the 4-rank pipeline"; }
grep -q 'resumed' run.txt || { cat run.txt; die "the pipeline did not resume after the killed rank"; }
say "het-compile --plan auto ($(grep -c '^stage' auto.txt) stage); 4-rank 2x2 pipeline under het-run survived a SIGKILL: $(grep '\[rank 2\] step 39 loss' run.txt)"

# GPU code objects: the CUDA toolkit is the system's; the ROCm toolkit folder
# is the installed lib/het/rocm-toolkit.
het-compile "$examples/models/mlp.mlir" --target=hip --gpu-arch=gfx942 --emit=gpu-binary -o mlp.hsaco
/usr/lib/llvm-19/bin/llvm-readelf -h mlp.hsaco | grep -c AMDGPU > /dev/null || die "mlp.hsaco is not an AMDGPU ELF"
gpu="hsaco for gfx942"
if [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ]; then
  het-compile "$examples/models/mlp.mlir" --target=cuda --gpu-arch=sm_90 --emit=gpu-binary -o mlp.cubin
  /usr/lib/llvm-19/bin/llvm-readelf -h mlp.cubin | grep -c 'NVIDIA CUDA' > /dev/null || die "mlp.cubin is not a CUDA ELF"
  gpu="$gpu and cubin for sm_90"
fi
say "GPU code objects from the moved tree: $gpu"

# --- bad installations fail with the place they looked in -------------------
mkdir -p lonely/bin && cp "$PREFIX/bin/het-compile" lonely/bin/
if lonely/bin/het-compile "$examples/models/mlp.mlir" -o lonely/mlp 2> lonely.txt; then
  die "het-compile without its lib/ linked anyway"
fi
grep -q "the runtime library not found (a folder holding libhetrt.so); looked in $work/lonely/lib; set \$HET_RUNTIME_DIR" lonely.txt \
  || { cat lonely.txt; die "het-compile's error for a missing runtime"; }
HET_RUNTIME_DIR="$PREFIX/lib" lonely/bin/het-compile "$examples/models/mlp.mlir" -o lonely/mlp \
  || die "HET_RUNTIME_DIR does not override"
if HET_DEVICE_CATALOG=/nonexistent het-plan --cluster "$examples/clusters/mixed-node.json" \
     --model train.mlir > /dev/null 2> catalog.txt; then
  die "het-plan ran without a catalog"
fi
grep -q 'the device catalog not found; looked in $HET_DEVICE_CATALOG=/nonexistent' catalog.txt \
  || { cat catalog.txt; die "het-plan's error for a missing catalog"; }
say "a tool without its runtime or catalog says where it looked: $(head -n 1 lonely.txt)"

# --- a project that uses hetccl: find_package and pkg-config ---------------
consumer="$examples/hetccl-consumer"
cmake -G Ninja -S "$consumer" -B consumer-cmake -DCMAKE_PREFIX_PATH="$PREFIX" > consumer.txt
cmake --build consumer-cmake >> consumer.txt
het-run -n 2 consumer-cmake/allreduce 1000003 > consumer-run.txt 2>&1 \
  || { cat consumer-run.txt; die "the find_package(hetccl) consumer"; }
[ "$(grep -c 'floats correct' consumer-run.txt)" = 2 ] || die "the consumer's all-reduce is wrong"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc -Wall -Werror "$consumer/allreduce.c" $(pkg-config --cflags --libs hetccl) \
  -Wl,-rpath,"$(pkg-config --variable=libdir hetccl)" -o allreduce-pc
het-run -n 2 ./allreduce-pc 4099 > pc-run.txt 2>&1 || { cat pc-run.txt; die "the pkg-config consumer"; }
[ "$(grep -c 'floats correct' pc-run.txt)" = 2 ] || die "the pkg-config consumer's all-reduce is wrong"
say "hetccl consumer built with find_package(hetccl) and with pkg-config; 2-rank all-reduces correct"

# find_package(het): the tools as imported executables in a build.
mkdir uses-het && cat > uses-het/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(uses_het LANGUAGES C CXX)
find_package(het 0.1 CONFIG REQUIRED)
foreach(target het::hetrt het::HetCheckpoint hetccl::hetccl het::het-compile het::het-run)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "find_package(het) has no ${target}")
  endif()
endforeach()
add_custom_command(OUTPUT mlp COMMAND het::het-compile ${MODEL} -o mlp DEPENDS ${MODEL})
add_custom_target(model ALL DEPENDS mlp)
CMAKE
cmake -G Ninja -S uses-het -B uses-het/build -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DMODEL="$examples/models/mlp.mlir" > uses-het.txt
cmake --build uses-het/build >> uses-het.txt
uses-het/build/mlp --steps 3 --print-every 3 > /dev/null || die "the model built by het::het-compile"
say "find_package(het): imported targets present; a build compiled the MLP with het::het-compile"

# --- the Python package: a wheel into a fresh venv --------------------------
# The fresh venv sees the project venv's packages (torch, numpy) through a
# .pth file, so nothing is downloaded; het itself comes only from the wheel.
"$VENV/bin/python" -m venv "$TMP/fresh"
site=$("$TMP/fresh/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/project-venv.pth"
# The wheel is built with the project venv's setuptools and wheel (offline,
# as a release build would be); the fresh venv only installs it.
"$VENV/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  -w "$TMP/wheels" "$TMP/python-src" > wheel.txt 2>&1 || { cat wheel.txt; die "building the wheel"; }
wheel=$(ls "$TMP"/wheels/het-*.whl)
"$TMP/fresh/bin/pip" install -q --disable-pip-version-check --no-index "$wheel" > pip.txt 2>&1 \
  || { cat pip.txt; die "pip install of $(basename "$wheel")"; }
where=$("$TMP/fresh/bin/python" -c 'import het, het.aten.conv; print(het.__file__)')
[[ "$where" == "$site"/het/* ]] || die "het imported from $where, not the fresh venv"
"$TMP/fresh/bin/python" -m het.export "$examples/torch/cifar_net.py:Net" --input-shape 4,3,32,32 \
  --loss cross_entropy -o net.mlir --train-steps 3 --lr 0.01 --check > export.txt 2>&1 \
  || { cat export.txt; die "python -m het.export from the wheel"; }
"$TMP/fresh/bin/het-export" --help > /dev/null || die "the het-export script"
# hetccl as a torch.distributed backend from the installed tree: the wheel's
# het.distributed finds lib/het/python/_hetccl*.so next to het-run's bin/.
cat > ddp_smoke.py <<'PY'
import torch, torch.distributed as dist
import het.distributed
dist.init_process_group("hetccl")
t = torch.full((4,), float(dist.get_rank() + 1))
dist.all_reduce(t)
print(f"all_reduce sum={t[0].item():g}", flush=True)
dist.destroy_process_group()
PY
het-run -n 2 --timeout-ms 60000 "$TMP/fresh/bin/python" ddp_smoke.py > ddp.txt 2>&1 \
  || { cat ddp.txt; die "a torch.distributed job on the installed hetccl backend"; }
[ "$(grep -c 'all_reduce sum=3' ddp.txt)" = 2 ] || { cat ddp.txt; die "the hetccl backend's all_reduce result"; }
say "torch.distributed: dist.init_process_group('hetccl') under het-run from the installed tree: $(grep -m1 'all_reduce' ddp.txt)"
say "pip: $(basename "$wheel") in a fresh venv; python -m het.export of examples/torch/cifar_net.py with --check (het-eval from PATH): $(grep -m1 -i 'agree\|match' export.txt || tail -n 1 export.txt)"
