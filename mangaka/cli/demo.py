"""``python -m mangaka demo``: the sample chapter's screenplay and storyboard, with the embedded toy
model unless ``--model`` names one (``write``'s plan and run)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..compose.extract import screenplay_from_file
from ..demo import DEMO_CHAPTER, DEMO_MODEL_FILE, REAL_MODEL_HINT, demo_model_path
from .args import add_model_args, add_reading_arg, open_llm
from .video import check_video_output, default_output, storyboard_video
from .write import prepare_write, run_write

log = logging.getLogger("mangaka")

DEMO_OUTPUT = "demo.screenplay.json"  # in the current folder, with demo.storyboard.png beside it


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="write a screenplay for a sample chapter and draw its storyboard page "
        "(toy model unless --model)",
    )
    p.add_argument("--chapter", type=Path, help="chapter text file (default: a sample chapter)")
    add_model_args(
        p,
        "demo",
        model_required=False,
        output=f"screenplay JSON file to write (default: {DEMO_OUTPUT} in the current folder); the "
        "storyboard picture goes beside it, named without .json and .screenplay: X.json or "
        "X.screenplay.json gives X.storyboard.png (X.storyboard-2.png… for more pages)",
    )
    add_reading_arg(p)
    p.add_argument(
        "--video", action="store_true",
        help="also a motion comic of the storyboard beside the screenplay (X.mp4, with its subtitles, "
        "voice script and timeline)",
    )  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    output = args.output or Path.cwd() / DEMO_OUTPUT
    plan = prepare_write(
        args, args.chapter or DEMO_CHAPTER, args.model, output=output, storyboard=True,
        default_model=demo_model_path,
    )  # fmt: skip
    video = default_output(output) if args.video else None
    if video is not None:  # checked before the model loads
        check_video_output(video, {"the chapter": args.chapter, "the screenplay": output})
    if args.model is None:
        log.warning(
            "demo: using the embedded toy model %s (135M parameters) for a smoke run; its "
            "screenplay is valid but its writing is poor. %s",
            DEMO_MODEL_FILE,
            REAL_MODEL_HINT,
        )
    for path in run_write(open_llm(args, plan.model), plan):
        sys.stdout.write(f"{path}\n")
    if video is not None:
        screenplay = screenplay_from_file(output)
        for path in storyboard_video(screenplay, video):
            sys.stdout.write(f"{path}\n")
    return 0
