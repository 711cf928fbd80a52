#!/usr/bin/env bash
# The checks only a GPU machine can run, as one short script for the device
# tool (docs/gpu.md and docs/hetccl.md, "What only a GPU run verifies").
#
#   bash scripts/gpu_check.sh --prepare  # here: fills build/gpu-check
#   bash scripts/gpu_check.sh            # on the GPU machine (carry build/gpu-check)
#   bash scripts/gpu_check.sh --profile  # there: only where the kernels' time goes
#
# The GPU machine has the NVIDIA driver, CUDA 13 and PyTorch, but neither
# LLVM, oneDNN nor a way to build het, so --prepare gathers everything the
# run needs into build/gpu-check (about 25 MiB):
#   bin/     hetccl-device-test, hetccl-bench and het-run
#   models/  het's GPU executables of the MLP, CNN and GPT examples (sm_80 and
#            sm_90) with the x86 build's 20-step traces they must match, the
#            bench models (bench/codegen) timed against PyTorch CUDA eager,
#            and pipelines whose first stage is on the GPU and second on a
#            CPU rank (docs/gpu.md, "Pipelines with GPU stages") with the
#            one-rank trace they must match
#   runtime-libs.tar.xz  libhetrt and libhetccl (stripped) and the shared
#            libraries they need beyond glibc and libstdc++ (oneDNN, libzip,
#            ...), taken from this machine's packages; libcudart as a fallback
# The run checks, in this order, and goes on after a failure so one run
# reports everything:
#   1. hetccl's device tests (a test that skips for want of a device fails);
#   2. hetccl-bench on device buffers: a CUDA rank beside a host rank
#      (staged), and a CUDA-only communicator (NCCL), each checked for exact
#      results, with host buffers in the same run as the peer;
#   3. the examples trained 20 steps on the GPU against the x86 trace (1e-4),
#      the MLP and GPT in bf16 (cublasGemmEx on the tensor cores) against the
#      x86 bf16 trace (5e-2), and the two-stage GPU+CPU pipelines
#      (het-run -n 2) against one rank;
#   4. the bench MLP and CNN timed against PyTorch CUDA eager, same run, with
#      cuBLAS/cuDNN calls (the default) and with every op generated; the
#      bench MLP in bf16 against PyTorch CUDA autocast bf16;
#   5. where the time goes: each executable's kernels by total time
#      (HET_GPU_PROFILE=1, docs/gpu.md), the top rows of each.
# Results go to $OUT: gpu_check.log (everything printed) and details.tar.gz.
# Exits non-zero if any check failed.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$here/build/gpu-check"

if [ "${1:-}" = "--prepare" ]; then
  set -e
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/models" "$dir/lib" "$dir/cudart"
  compile() { "$here/build/bin/het-compile" "$@"; }
  for model in mlp cnn gpt; do
    options=()
    [ "$model" = gpt ] && options=(--optimizer adam --lr 0.01)
    for arch in sm_80 sm_90; do
      compile "$here/examples/models/$model.mlir" "${options[@]}" --target=cuda --gpu-arch=$arch \
        -o "$dir/models/$model.$arch"
    done
    compile "$here/examples/models/$model.mlir" "${options[@]}" -o "$dir/models/$model.x86"
    "$dir/models/$model.x86" --steps 20 --seed 2 > "$dir/models/$model.x86.txt"
  done
  # Mixed precision: bf16 builds (cublasGemmEx on the tensor cores) against
  # the x86 bf16 build whose products are f32 on bf16-rounded operands.
  for model in mlp gpt; do
    options=(--optimizer adam --lr 0.01 --precision bf16)
    for arch in sm_80 sm_90; do
      compile "$here/examples/models/$model.mlir" "${options[@]}" --target=cuda --gpu-arch=$arch \
        -o "$dir/models/$model.bf16.$arch"
    done
    compile "$here/examples/models/$model.mlir" "${options[@]}" --bf16-products f32 -o "$dir/models/$model.bf16.x86"
    "$dir/models/$model.bf16.x86" --steps 20 --seed 2 > "$dir/models/$model.bf16.x86.txt"
  done
  # Pipelines: the first stage on the GPU (an H100 or A100 group), the
  # second on a cpu.onednn rank, against the one-rank trace.
  cluster="$here/examples/clusters/gpu-and-cpu.json"
  python3 "$here/utils/make_plan.py" "$cluster" "$dir/models/one.plan.json" --global-batch 128 \
    --micro-batches 2 --stage 0:3=onednn:1
  compile "$here/examples/models/mlp.mlir" --plan "$dir/models/one.plan.json" -o "$dir/models/pipeline.x86"
  "$dir/models/pipeline.x86" --steps 20 --seed 2 > "$dir/models/pipeline.x86.txt"
  for pair in sm_90:h100 sm_80:a100; do
    python3 "$here/utils/make_plan.py" "$cluster" "$dir/models/gpu-cpu.${pair%%:*}.plan.json" \
      --global-batch 128 --micro-batches 2 --stage "0:2=${pair##*:}:1" --stage 2:3=onednn:1
    compile "$here/examples/models/mlp.mlir" --plan "$dir/models/gpu-cpu.${pair%%:*}.plan.json" \
      -o "$dir/models/pipeline.${pair%%:*}"
  done
  for model in mlp_784 cnn_b64; do
    for arch in sm_80 sm_90; do
      compile "$here/bench/codegen/$model.mlir" --target=cuda --gpu-arch=$arch -o "$dir/models/bench-$model.$arch"
      # The same with every op generated (no cuBLAS or cuDNN): what the
      # vendor libraries gain.
      compile "$here/bench/codegen/$model.mlir" --target=cuda --gpu-arch=$arch --gpu-libraries=generated \
        -o "$dir/models/bench-$model.generated.$arch"
    done
  done
  for arch in sm_80 sm_90; do
    compile "$here/bench/codegen/mlp_784.mlir" --target=cuda --gpu-arch=$arch --precision bf16 \
      -o "$dir/models/bench-mlp_784.bf16.$arch"
  done
  cp "$here/build/bin/hetccl-device-test" "$here/build/bin/hetccl-bench" "$here/build/bin/het-run" "$dir/bin/"
  strip --strip-unneeded "$dir/bin/"*
  # libhetrt, libhetccl and what they load beyond glibc and libstdc++ (which
  # the GPU machine's newer distribution has): by soname, dereferenced.
  for f in "$here/build/lib/libhetrt.so" "$here/build/lib/libhetccl.so"; do
    cp "$f" "$dir/lib/"
  done
  ldd "$here/build/lib/libhetrt.so" "$here/build/lib/libhetccl.so" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    sort -u | while read -r soname path; do
      case "$soname" in
        libc.so*|libm.so*|libmvec.so*|libstdc++.so*|libgcc_s.so*|libhetrt.so|libhetccl.so) ;;
        *) cp -L "$path" "$dir/lib/$soname" ;;
      esac
    done
  # het-run's own (cpp-httplib, OpenSSL, ...) apart, so that they never
  # shadow the GPU machine's for PyTorch.
  mkdir -p "$dir/lib/het-run"
  ldd "$here/build/bin/het-run" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r soname path; do
      case "$soname" in
        libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*) ;;
        *) [ -e "$dir/lib/$soname" ] || cp -L "$path" "$dir/lib/het-run/$soname" ;;
      esac
    done
  strip --strip-unneeded "$dir/lib/"*.so* "$dir/lib/het-run/"*
  tar -C "$dir" -cJf "$dir/runtime-libs.tar.xz" lib
  rm -rf "$dir/lib"
  # hetccl opens libcudart by name; the GPU machine's own comes first.
  cudart=$(ls /usr/local/cuda/lib64/libcudart.so.1[0-9] 2>/dev/null | head -n 1)
  [ -n "$cudart" ] && cp -L "$cudart" "$dir/cudart/"
  echo "gpu_check: prepared $(find "$dir" -type f | wc -l) files, $(du -sh "$dir" | cut -f1), in $dir"
  exit 0
fi

out="${OUT:-$(mktemp -d)}"
work="$(mktemp -d)"
mkdir -p "$work/details"
exec > >(tee "$out/gpu_check.log") 2>&1
failed=()
fail() { echo "gpu_check: FAILED: $*"; failed+=("$1"); }
# Everything kept for later lands in details.tar.gz (the device tool brings
# back at most 8 files).
finish() {
  tar -C "$work" -czf "$out/details.tar.gz" details 2>/dev/null
  if [ ${#failed[@]} -eq 0 ]; then
    echo "gpu_check: all GPU checks ran and passed"
    exit 0
  fi
  echo "gpu_check: ${#failed[@]} check(s) failed: ${failed[*]}"
  exit 1
}

[ -d "$dir/models" ] || { echo "gpu_check: $dir is missing: run 'bash scripts/gpu_check.sh --prepare' and carry it"; exit 1; }
date -u +"gpu_check: %Y-%m-%d %H:%M UTC on $(hostname), $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown OS}")"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader || fail nvidia-smi
tar -C "$work" -xJf "$dir/runtime-libs.tar.xz"
# NCCL, cuBLAS, cuDNN and the CUDA runtime: the machine's own (CUDA toolkit,
# PyTorch's wheels), then the carried libcudart.
vendor=$(find /usr/local/cuda*/ /usr/lib/x86_64-linux-gnu /opt /usr/local/lib -maxdepth 10 \
  \( -name 'libnccl.so.2' -o -name 'libcudart.so.1[0-9]' -o -name 'libcublas.so.1[0-9]' -o -name 'libcudnn.so.9' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
export LD_LIBRARY_PATH="$work/lib${vendor:+:$vendor}:$dir/cudart${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "gpu_check: vendor libraries from ${vendor:-(none found)}"
missing=$(ldd "$work/lib/libhetrt.so" | grep 'not found' || true)
[ -z "$missing" ] || { echo "$missing"; fail "libhetrt cannot load"; finish; }

cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)
arch=sm_90
[ "${cap:-90}" -lt 90 ] && arch=sm_80

profile() {
  echo "== 5. kernel profiles (HET_GPU_PROFILE=1, 5 steps; the top rows)"
  for model in mlp cnn gpt bench-mlp_784 bench-cnn_b64; do
    if HET_GPU_PROFILE=1 timeout 300 "$dir/models/$model.$arch" --steps 5 > "$work/details/$model.profile.out" \
        2> "$work/details/$model.profile.txt"; then
      echo "  $model: $(grep throughput "$work/details/$model.profile.out")"
      sed -n '/het GPU kernel profile/,$p' "$work/details/$model.profile.txt" | head -n 10
    else
      cat "$work/details/$model.profile.txt"
      fail "profile $model"
    fi
  done
}
if [ "${1:-}" = "--profile" ]; then
  profile
  finish
fi

echo "== 1. hetccl device kinds (test/ccl/DeviceTest.cpp)"
if timeout 300 "$dir/bin/hetccl-device-test" --gtest_filter='Devices.*' > "$work/details/device-test.log" 2>&1; then
  if grep -q '\[  SKIPPED \] Devices\..*OnAGpu' "$work/details/device-test.log"; then fail "a GPU device test skipped"; fi
else
  fail "hetccl-device-test"
fi
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$work/details/device-test.log"

echo "== 2. hetccl-bench on device buffers (all-reduce, f32 sum, exact check)"
bench() {
  local name="$1"; shift
  if timeout 240 "$dir/bin/hetccl-bench" -b 4K -e 64M -f 8 -n 10 -w 3 -c 1 -T 60000 "$@" \
      > "$work/details/bench-$name.txt" 2>&1; then
    awk '!/^#/ && NF >= 9 {printf "  %-22s %10s B %10s us %8s GB/s busbw, wrong %s, %s\n", n, $1, $6, $8, $9, $10}' \
      n="$name" "$work/details/bench-$name.txt"
  else
    cat "$work/details/bench-$name.txt"
    fail "hetccl-bench $name"
  fi
}
bench host-2ranks -np 2
bench cuda+host-2ranks -np 2 -D cuda:0
bench cuda-1rank-nccl -np 1 -D cuda:all

echo "== 3. het's GPU executables against the x86 build's trace (20 steps, <= 1e-4)"
for model in mlp cnn gpt; do
  exe="$dir/models/$model.$arch"
  if timeout 300 "$exe" --steps 20 --seed 2 > "$work/details/$model.gpu.txt" 2> "$work/details/$model.gpu.err"; then
    verdict=$(python3 "$here/test/het-compile/Inputs/compare_traces.py" \
      "$dir/models/$model.x86.txt" "$work/details/$model.gpu.txt" --tolerance 1e-4) || fail "$model trace"
    echo "  $model ($arch): $verdict; $(grep throughput "$work/details/$model.gpu.txt")"
  else
    cat "$work/details/$model.gpu.err"
    fail "$model on the GPU"
  fi
done

echo "   bf16 (cublasGemmEx, tensor cores) against the x86 bf16 build (20 steps, <= 5e-2: the
   bound test/gpu/precision.test puts on the emulation of the same builds)"
for model in mlp gpt; do
  exe="$dir/models/$model.bf16.$arch"
  if timeout 300 "$exe" --steps 20 --seed 2 > "$work/details/$model.bf16.gpu.txt" 2> "$work/details/$model.bf16.gpu.err"; then
    verdict=$(python3 "$here/test/het-compile/Inputs/compare_traces.py" \
      "$dir/models/$model.bf16.x86.txt" "$work/details/$model.bf16.gpu.txt" --tolerance 5e-2) || fail "$model bf16 trace"
    echo "  $model bf16 ($arch): $verdict; $(grep throughput "$work/details/$model.bf16.gpu.txt")"
  else
    cat "$work/details/$model.bf16.gpu.err"
    fail "$model bf16 on the GPU"
  fi
done

echo "   pipelines: stage s0 on the GPU, s1 on a CPU rank (het-run -n 2), against one rank"
if LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$work/lib/het-run" timeout 300 "$dir/bin/het-run" -n 2 \
    --timeout-ms 120000 "$dir/models/pipeline.$arch" --steps 20 --seed 2 \
    > "$work/details/pipeline.gpu.txt" 2> "$work/details/pipeline.gpu.err"; then
  verdict=$(python3 "$here/test/het-compile/Inputs/compare_traces.py" \
    "$dir/models/pipeline.x86.txt" "$work/details/pipeline.gpu.txt" --tolerance 1e-4) || fail "pipeline trace"
  echo "  pipeline ($arch + cpu.onednn): $verdict"
  grep -E '^\[rank [0-9]\] rank [0-9]: (stage|gpu)' "$work/details/pipeline.gpu.txt" | sed 's/^/    /'
else
  cat "$work/details/pipeline.gpu.err" "$work/details/pipeline.gpu.txt" | tail -n 20
  fail "pipeline on the GPU"
fi

echo "== 4. bench models: het on the GPU vs PyTorch CUDA eager, same run (samples/s)"
for pair in mlp_784:MLP cnn_b64:CNN; do
  model=${pair%%:*} torch_name=${pair##*:}
  steps=50
  het=$(timeout 300 "$dir/models/bench-$model.$arch" --steps $steps --print-every $steps 2>&1 |
        tee "$work/details/bench-$model.gpu.txt" | sed -n 's/^throughput \([0-9.]*\) samples.*/\1/p')
  torch=$(timeout 300 python3 "$here/bench/codegen/torch_train.py" "$torch_name" $steps 1 cuda 2>&1 |
          tee "$work/details/bench-$model.torch.txt" | sed -n 's/^samples\/s \([0-9.]*\) .*/\1/p')
  generated=$(timeout 300 "$dir/models/bench-$model.generated.$arch" --steps $steps --print-every $steps 2>&1 |
        tee "$work/details/bench-$model.generated.gpu.txt" | sed -n 's/^throughput \([0-9.]*\) samples.*/\1/p')
  if [ -n "$het" ] && [ -n "$torch" ]; then
    echo "  $torch_name: het $het (every op generated: ${generated:-failed}), PyTorch $torch ($(sed -n 's/.*torch \(.*\)/\1/p' "$work/details/bench-$model.torch.txt")), het/PyTorch $(python3 -c "print(f'{$het / $torch:.3f}x')")"
  else
    cat "$work/details/bench-$model.gpu.txt" "$work/details/bench-$model.torch.txt"
    fail "bench $model"
  fi
done
echo "   bf16: het --precision bf16 against PyTorch CUDA autocast bf16, same run (samples/s)"
het=$(timeout 300 "$dir/models/bench-mlp_784.bf16.$arch" --steps 50 --print-every 50 2>&1 |
      tee "$work/details/bench-mlp_784.bf16.gpu.txt" | sed -n 's/^throughput \([0-9.]*\) samples.*/\1/p')
torch=$(timeout 300 python3 "$here/bench/codegen/torch_train.py" MLP 50 1 cuda bf16 2>&1 |
        tee "$work/details/bench-mlp_784.bf16.torch.txt" | sed -n 's/^samples\/s \([0-9.]*\) .*/\1/p')
if [ -n "$het" ] && [ -n "$torch" ]; then
  echo "  MLP bf16: het $het, PyTorch autocast $torch, het/PyTorch $(python3 -c "print(f'{$het / $torch:.3f}x')")"
else
  cat "$work/details/bench-mlp_784.bf16.gpu.txt" "$work/details/bench-mlp_784.bf16.torch.txt"
  fail "bench MLP bf16"
fi
profile
finish
