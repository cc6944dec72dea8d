"""``python -m mangaka doctor``: what this machine's llama.cpp can do, and what is wrong."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..doctor import diagnose, read_checkpoint
from .args import add_declared_flags


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="what this machine's llama.cpp can do, and what is wrong")
    p.add_argument("--model", type=Path, help="a GGUF model to check (architecture, memory)")
    add_declared_flags(p, "doctor")  # --ctx: the context the memory estimate is for
    p.add_argument(
        "--checkpoint",
        metavar="FILE_OR_GB",
        help="an image checkpoint (.safetensors, or its size in GiB): do it and --model fit together?",
    )
    p.add_argument("--json", action="store_true", help="the findings as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    checkpoint = read_checkpoint(args.checkpoint) if args.checkpoint is not None else None
    report = diagnose(args.model, args.ctx, checkpoint=checkpoint)
    sys.stdout.write((report.to_json() if args.json else report.text()) + "\n")
    return 1 if report.worst == "error" else 0
