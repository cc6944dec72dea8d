"""``python -m mangaka bench``: speed figures measured side by side on this machine."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .args import add_declared_flags, load_options_from_args


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="speed figures measured side by side on this machine (keys: docs/performance.md)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (keys in docs/performance.md)")
    p.add_argument("--quick", action="store_true", help="fewer tokens and one repeat: a smoke run")
    add_declared_flags(p, "bench")  # --gpu-layers (default 0 here: the CPU figures), --threads
    p.add_argument("--engine", help="constrained-decoding engine (default: the fastest measured)")
    p.add_argument(
        "--only", action="append",
        help="run only this part (repeatable); real_shape (Qwen3.5-35B-A3B's shape, random weights) "
        "runs only when named",
    )  # fmt: skip
    p.add_argument("--quant", choices=("Q4_K_M", "Q3_K_M"), default="Q4_K_M",
                   help="real_shape: the llama.cpp layout of its model")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..devtools import bench  # a development tool: loaded only when the benchmark runs

    load_options_from_args(args)  # --threads, --gpu-layers in the ranges their help says
    figures = bench.run(
        threads=args.threads or (os.cpu_count() or 1),
        gpu_layers=args.gpu_layers,
        quick=args.quick,
        engine=args.engine,
        only=args.only,
        quant=args.quant,
    )
    if args.json:
        sys.stdout.write(json.dumps(figures, sort_keys=False) + "\n")
    else:
        sys.stdout.write(bench.format_table(figures) + "\n")
    return 0
