#!/usr/bin/env bash
# Run the manga_page example on a machine with an NVIDIA GPU and a ComfyUI, with real memory
# figures, and report whether the pack released the LLM when ComfyUI needed the GPU's memory for
# the checkpoint (nodes/memory.py), with the GPU's memory in use sampled through the run.
#
# NOT RUN YET ON A GPU: written without a GPU machine at hand. It is bash -n clean, and it was
# dry-run once on a CPU machine (a stand-in nvidia-smi, the offload check dropped, ComfyUI with
# --cpu, a tiny model and checkpoint): start, run, report and stop worked there. What it reports
# on a real card (the release line, the memory figures) has not been seen yet; the mechanism it
# exercises is tested on the CPU by tests/comfy/test_memory.py.
#
#   COMFY_DIR=~/ComfyUI LLM=~/models/Qwen3.5-35B-A3B-Q4_K_M.gguf \
#     CHECKPOINT=~/models/sd_xl_base_1.0.safetensors bash native/gpu_manga_page.sh
#
# The ComfyUI is started on a free port with its own throwaway base directory: custom_nodes/ links
# this checkout, models/LLM and models/checkpoints link the two files; the user's ComfyUI folders
# are not touched. Its python needs a CUDA build of llama-cpp-python
# (python native/install.py --target cuda --python "$COMFY_PYTHON").
# Environment:
#   COMFY_DIR     the ComfyUI folder (with main.py); required
#   COMFY_PYTHON  its interpreter (default: $COMFY_DIR/venv/bin/python, else $COMFY_DIR/../venv/bin/python,
#                 else python3)
#   LLM           the GGUF model; required
#   CHECKPOINT    the image checkpoint (.safetensors); required
#   MEMORY        Load LLM's memory option: "keep loaded" (default) or "release after each run"
#   GPU_LAYERS    Load LLM's gpu_layers (default -1: all)
#   CONTEXT       Load LLM's context (default 32768)
#   PANELS        the Screenwriter's panels (default 6), STEPS the KSampler's steps (default 20)
#   WRITER_INPUTS more Screenwriter inputs as JSON, e.g. '{"sampling": "greedy", "dialogue_lines": 4}'
#   WIDTH HEIGHT  the latent size (default 832 1216, the example's)
#   TIMEOUT       seconds the run may take (default 1800)
#   WORK          work folder (default /tmp/mangaka-gpu-manga-page); OUT: results copied there
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${WORK:-/tmp/mangaka-gpu-manga-page}
out=${OUT:-}
results=$work/results
base=$work/comfy-base
mkdir -p "$results"
started=$SECONDS

say() { echo "gpu_manga_page [$((SECONDS - started)) s]: $*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}
comfy_pid=
smi_pid=
cleanup() { # on exit: stop ComfyUI and the memory sampler; copy the results so far to $OUT
  if [ -n "$smi_pid" ]; then kill "$smi_pid" 2>/dev/null || true; fi
  if [ -n "$comfy_pid" ] && kill -0 "$comfy_pid" 2>/dev/null; then
    say "stopping ComfyUI ($comfy_pid)"
    kill -INT -- "-$comfy_pid" 2>/dev/null || kill -INT "$comfy_pid" 2>/dev/null || true
    for _ in $(seq 1 30); do
      kill -0 "$comfy_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL -- "-$comfy_pid" 2>/dev/null || true
  fi
  if [ -n "$out" ]; then
    if ! { mkdir -p "$out" && cp -r "$results"/. "$out"/; }; then say "WARNING: could not copy results to $out"; fi
  fi
}
trap cleanup EXIT

# -- inputs -------------------------------------------------------------------------------------
[ -n "${COMFY_DIR:-}" ] || die "set COMFY_DIR to the ComfyUI folder (the one with main.py)"
comfy=$(cd "$COMFY_DIR" && pwd)
[ -f "$comfy/main.py" ] || die "COMFY_DIR=$COMFY_DIR has no main.py"
python=${COMFY_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in "$comfy/venv/bin/python" "$comfy/../venv/bin/python" "$(command -v python3 || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      python=$candidate
      break
    fi
  done
fi
[ -n "$python" ] && [ -x "$python" ] || die "no python for ComfyUI found; set COMFY_PYTHON"
[ -n "${LLM:-}" ] && [ -f "$LLM" ] || die "set LLM to a GGUF model file (got '${LLM:-}')"
[ -n "${CHECKPOINT:-}" ] && [ -f "$CHECKPOINT" ] || die "set CHECKPOINT to a .safetensors checkpoint (got '${CHECKPOINT:-}')"
memory=${MEMORY:-keep loaded}
case "$memory" in "keep loaded" | "release after each run") ;; *) die "MEMORY must be 'keep loaded' or 'release after each run', not '$memory'" ;; esac
llm=$(cd "$(dirname "$LLM")" && pwd)/$(basename "$LLM")
ckpt=$(cd "$(dirname "$CHECKPOINT")" && pwd)/$(basename "$CHECKPOINT")

# -- the machine --------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this script needs an NVIDIA GPU and driver"
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader \
  | tee "$results/gpu.txt" >&2 || die "nvidia-smi cannot talk to the GPU"
"$python" - <<'EOF' 2>&1 | tee "$results/llama-cpp.txt" >&2 || die "llama-cpp-python is not importable by $python"
import llama_cpp
print("llama-cpp-python", llama_cpp.__version__)
print("llama_supports_gpu_offload():", bool(llama_cpp.llama_supports_gpu_offload()))
EOF
grep -q "llama_supports_gpu_offload(): True" "$results/llama-cpp.txt" \
  || die "ComfyUI's llama-cpp-python cannot offload to the GPU: python native/install.py --target cuda --python $python"

# What the doctor expects (a record, not a gate).
(cd "$root" && "$python" -m mangaka doctor --model "$llm" --ctx "${CONTEXT:-32768}" --checkpoint "$ckpt") \
  >"$results/doctor.txt" 2>&1 || say "the doctor reports an error (see $results/doctor.txt)"
grep -E "memory|with checkpoint" "$results/doctor.txt" >&2 || true

# -- ComfyUI with the pack, on the GPU ------------------------------------------------------------
rm -rf "$base"
mkdir -p "$base/custom_nodes" "$base/models/LLM" "$base/models/checkpoints"
ln -s "$root" "$base/custom_nodes/comfyui-mangaka"
ln -s "$llm" "$base/models/LLM/$(basename "$llm")"
ln -s "$ckpt" "$base/models/checkpoints/$(basename "$ckpt")"
port=$("$python" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
log=$results/comfyui.log
say "starting ComfyUI on port $port; log $log"
setsid "$python" "$comfy/main.py" --listen 127.0.0.1 --port "$port" --base-directory "$base" \
  --database-url "sqlite:///:memory:" --disable-auto-launch >"$log" 2>&1 </dev/null &
comfy_pid=$!
ready=0
for _ in $(seq 1 240); do
  kill -0 "$comfy_pid" 2>/dev/null || die "ComfyUI exited during start-up; see $log"
  if "$python" -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/object_info/KSampler', timeout=2)" 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.5
done
[ "$ready" = 1 ] || die "ComfyUI did not answer within 120 s; see $log"
grep -q "IMPORT FAILED" "$log" && say "WARNING: a custom node failed to import (see $log)"

nvidia-smi --query-gpu=timestamp,memory.used,memory.total --format=csv,noheader,nounits -lms 500 \
  >"$results/gpu-memory.csv" 2>/dev/null &
smi_pid=$!

# -- the run --------------------------------------------------------------------------------------
say "manga_page: $(basename "$llm") + $(basename "$ckpt"), memory '$memory'"
status=0
PORT=$port LLM_NAME=$(basename "$llm") CKPT_NAME=$(basename "$ckpt") MEMORY_MODE=$memory \
  "$python" - "$root/example_workflows/api/manga_page.json" "$results/run.json" <<'EOF' || status=$?
import json, os, sys, time, urllib.error, urllib.request

source, target = sys.argv[1:3]
url = f"http://127.0.0.1:{os.environ['PORT']}"
prompt = json.load(open(source, encoding="utf-8"))
for node in prompt.values():
    inputs, kind = node["inputs"], node["class_type"]
    if kind == "MangakaLoadLLM":
        inputs.update(model=os.environ["LLM_NAME"], memory=os.environ["MEMORY_MODE"],
                      gpu_layers=int(os.environ.get("GPU_LAYERS", "-1")),
                      context=int(os.environ.get("CONTEXT", "32768")))
    elif kind == "MangakaScreenwriter":
        inputs["panels"] = int(os.environ.get("PANELS", "6"))
        inputs.update(json.loads(os.environ.get("WRITER_INPUTS") or "{}"))
    elif kind == "CheckpointLoaderSimple":
        inputs["ckpt_name"] = os.environ["CKPT_NAME"]
    elif kind == "KSampler":
        inputs["steps"] = int(os.environ.get("STEPS", "20"))
    elif kind == "EmptyLatentImage":
        inputs.update(width=int(os.environ.get("WIDTH", "832")), height=int(os.environ.get("HEIGHT", "1216")))
body = json.dumps({"prompt": prompt}).encode()
request = urllib.request.Request(f"{url}/prompt", body, {"Content-Type": "application/json"})
try:
    prompt_id = json.load(urllib.request.urlopen(request, timeout=60))["prompt_id"]
except urllib.error.HTTPError as exc:
    json.dump({"status": "refused", "body": exc.read().decode(errors="replace")}, open(target, "w"))
    sys.exit(2)
started, deadline = time.monotonic(), time.monotonic() + float(os.environ.get("TIMEOUT", "1800"))
entry = None
while time.monotonic() < deadline:
    entry = json.load(urllib.request.urlopen(f"{url}/history/{prompt_id}", timeout=30)).get(prompt_id)
    if entry and entry.get("status", {}).get("completed") is not None:
        break
    time.sleep(1)
state = (entry or {}).get("status", {})
result = {"status": state.get("status_str", "timeout"), "seconds": round(time.monotonic() - started, 1),
          "messages": state.get("messages", [])}
json.dump(result, open(target, "w"), indent=2)
sys.exit(0 if result["status"] == "success" else 1)
EOF
kill "$smi_pid" 2>/dev/null || true
smi_pid=

# -- the report -----------------------------------------------------------------------------------
"$python" - "$log" "$results/gpu-memory.csv" "$results/run.json" "$(basename "$llm")" "$memory" \
  >"$results/summary.json" <<'EOF'
import json, os, re, sys

log_path, smi_path, run_path, model, memory = sys.argv[1:6]
log = open(log_path, encoding="utf-8", errors="replace").read()
released = [line for line in log.splitlines() if line.startswith(f"mangaka: released {model}")]
first_request = log.find("Requested to load")
first_release = log.find(f"mangaka: released {model}")
run = json.load(open(run_path)) if os.path.isfile(run_path) and os.path.getsize(run_path) else {}
peak = total = 0
for row in open(smi_path, encoding="utf-8", errors="replace"):
    parts = [p.strip() for p in row.split(",")]
    if len(parts) == 3 and parts[1].isdigit():
        peak, total = max(peak, int(parts[1])), int(parts[2])
summary = {
    "run": {k: v for k, v in run.items() if k != "messages"},
    "errors": [m[1].get("exception_message") for m in run.get("messages", []) if m[0] == "execution_error"],
    "memory_option": memory,
    "llm_released": bool(released),
    "released_before_comfyui_loaded": 0 <= first_release < first_request if released else False,
    "release_lines": released,
    "llm_loads": len(re.findall(rf"^loaded {re.escape(model)}:", log, flags=re.M)),
    "comfyui_models_unloaded": re.findall(r"^(\d+) models unloaded\.", log, flags=re.M),
    "out_of_memory": bool(re.search(r"out of memory|OutOfMemory", log, flags=re.I)),
    "gpu_memory_peak_mib": peak,
    "gpu_memory_total_mib": total,
}
json.dump(summary, sys.stdout, indent=2)
EOF
cat "$results/summary.json"
echo
if [ "$status" != 0 ]; then
  die "the run did not succeed (exit $status); see $results/run.json and $log"
fi
say "done; results in $results${out:+ and $out}"
