#!/usr/bin/env bash
# The test command (README): sets up .venv (cached llama-cpp-python wheel) and a real ComfyUI
# (cached outside the checkout), lints, then runs every tier: unit, model, comfy.
#   bash tests/run.sh [pytest args…]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash native/setup.sh --dev
.venv/bin/python tests/comfy_env.py
export MANGAKA_REQUIRE_COMFY=1
.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m pytest "$@"
