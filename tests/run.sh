#!/usr/bin/env bash
# The test command (README): sets up .venv (cached llama-cpp-python wheel) and a real ComfyUI
# (cached outside the checkout) and Debian's chromium when run as root, lints, then runs every
# tier: unit, model, comfy (with the browser test), bench.
#   bash tests/run.sh [pytest args…]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash native/setup.sh --dev
.venv/bin/python tests/comfy_env.py
# llama.cpp's own llama-server for the remote-LLM tests: built once from the vendored source,
# linked to the wheel's libraries, cached under ~/.cache/mangaka/llama-server.
.venv/bin/python native/llama_server.py >/dev/null
# The browser test drives Debian's chromium (no browser download); install it when we can.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
fi
export MANGAKA_REQUIRE_COMFY=1
.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m pytest "$@"
