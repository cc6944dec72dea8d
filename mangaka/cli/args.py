"""What ``write``, ``demo``, ``book`` and ``eval`` share, so an option means the same in each:

- ``add_model_args``: ``--model``, ``--lora``, Load LLM's and the Screenwriter's flags (from their
  declarations, as ``surfaces.py`` lists them for the command);
- ``request_from_args(args)``: the ``ScreenplayRequest``, checked; ``load_options_from_args(args)``:
  the ``LoadOptions`` and the run options (``--lora-scale``, ``--jump-forward``), checked;
- ``check_model_args(args, model)``: the model's (and LoRA's) GGUF header, read without loading;
- ``open_llm(args, model)``: the LLM, in-process (``--model``) or remote (``--remote``);

Every refusal is an ``InputError`` (or ``ModelFileError``/``LoraError``) naming the option as it is
typed on the command line and the fix.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ..errors import InputError
from ..llm.base import LLM
from ..llm.inprocess import LlamaCppLLM
from ..llm.loading import LoadOptions, check_lora_file, check_model_file
from ..llm.openai import OpenAICompatibleLLM
from ..llm.options import LOAD_OPTIONS, RUN_OPTIONS, RunOptions
from ..options import add_flags, fields_from_args, flag_names
from ..screenplay.options import OPTIONS, request_fields_from_args
from ..screenplay.request import ScreenplayRequest
from ..surfaces import shown_on

log = logging.getLogger("mangaka")

# The engine's field for a value → the option that sets it, to name the option in a message.
REQUEST_FLAGS = flag_names(OPTIONS)
LOAD_FLAGS = flag_names(LOAD_OPTIONS)
RUN_FLAGS = flag_names(RUN_OPTIONS)


def add_declared_flags(p: argparse.ArgumentParser, command: str, sets: tuple[str, ...] | None = None) -> None:
    """The flags of the declared options ``command`` shows (``mangaka/surfaces.py``), of ``sets``
    only when given, in the registry's order."""
    for shown in shown_on(command):
        if sets is None or shown.set in sets:
            add_flags(p, shown.options(), shown.defaults, shown.unset)


def add_model_args(
    p: argparse.ArgumentParser, command: str, *, model_required: bool, output: str | None
) -> None:
    """--model, --lora, Load LLM's and the Screenwriter's flags as ``command`` shows them, and
    ``-o`` when ``output`` is given."""
    p.add_argument("--model", type=Path, required=model_required, help="GGUF model file")
    p.add_argument("--lora", type=Path, help="GGUF LoRA adapter, attached after load")
    add_declared_flags(p, command, ("load", "run", "request"))
    if output is not None:
        p.add_argument("-o", "--output", type=Path, help=output)


def add_reading_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reading",
        type=Path,
        help="the chapter's reading (read --json), corrected by you: its speakers, names and title "
        "are forced",
    )


def request_from_args(args: argparse.Namespace) -> ScreenplayRequest:
    """The screenplay options of ``write``, ``demo`` or ``book``, checked."""
    try:
        return ScreenplayRequest(**request_fields_from_args(args))
    except InputError as exc:
        raise exc.renamed(REQUEST_FLAGS) from None


def load_options_from_args(args: argparse.Namespace) -> LoadOptions:
    """How to load ``--model``, checked."""
    try:
        return LoadOptions(**fields_from_args(args, LOAD_OPTIONS))
    except InputError as exc:
        raise exc.renamed(LOAD_FLAGS) from None


def run_options_from_args(args: argparse.Namespace) -> RunOptions:
    """How to run the loaded model (``--lora-scale``, ``--jump-forward``), checked."""
    try:
        return RunOptions(**fields_from_args(args, RUN_OPTIONS))
    except InputError as exc:
        raise exc.renamed(RUN_FLAGS) from None


def check_model_args(args: argparse.Namespace, model: Path) -> None:
    """``model`` (and ``--lora``) are GGUF files llama.cpp can load: their headers only are read."""
    info = check_model_file(model)
    if args.lora is not None:
        check_lora_file(args.lora, info.architecture, model.name)


def open_llm(args: argparse.Namespace, model: Path | None = None) -> LLM:
    """The LLM the arguments name: ``model`` (default ``--model``) loaded in-process, with
    ``--lora`` at ``--lora-scale``, or ``--remote`` (``book``). Loading is the slow part: check first."""
    if getattr(args, "remote", None):
        return OpenAICompatibleLLM(
            args.remote, args.remote_model, api_key_env=args.api_key_env, concurrency=args.concurrency
        )
    model = model or args.model
    run = run_options_from_args(args)
    llm = LlamaCppLLM(
        model, load_options_from_args(args), args.lora, run.lora_scale, jump_forward=run.jump_forward
    )
    log.info("model: %s", llm.model.report())
    return llm
