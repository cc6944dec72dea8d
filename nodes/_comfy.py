"""Glue between the engine and ComfyUI: progress bars, interrupt, model folders, output files.

Imported only inside ComfyUI (the pack root guards it)."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import comfy.model_management
import comfy.utils
import folder_paths

from ..mangaka.errors import Cancelled, InputError
from ..mangaka.fileio import write_atomic
from ..mangaka.llm.base import CancelFn, ProgressFn
from ..mangaka.options import Option

log = logging.getLogger("mangaka")

LLM_FOLDER = "LLM"
LORA_FOLDER = "llm_loras"
NONE = "none"
BIBLE_FOLDER = "mangaka_bibles"  # under ComfyUI's input folder


def widget(option: Option, **extra: Any) -> Any:
    """The node widget of a declared option (``mangaka/options.py``): its name, default, range or
    choices, step and tooltip, as declared; ``extra``: what only the node has (``optional``, …)."""
    from comfy_api.latest import io

    given: dict[str, Any] = {"default": option.widget_default, "tooltip": option.help}
    if option.step is not None:
        given["step"] = option.step
    given.update(extra)
    name, kind = option.widget, option.kind
    if kind == "bool":
        return io.Boolean.Input(name, **given)
    if kind in ("int", "float"):
        return (io.Float if kind == "float" else io.Int).Input(name, min=option.low, max=option.high, **given)
    if kind == "choice":
        return io.Combo.Input(name, options=list(option.widget_choices), **given)
    return io.String.Input(name, **given)


def from_widgets(options: Mapping[str, Option], values: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's fields from a node's widget values (by widget name); a widget not given, or
    linked (None in ``validate_inputs``), is left out."""
    return {
        o.field: values[o.widget] for o in options.values() if o.widget and values.get(o.widget) is not None
    }


def register_model_folders() -> None:
    """``models/LLM`` (GGUF models) and ``models/llm_loras`` (GGUF LoRA adapters), ``.gguf`` only.

    Paths the user set in ``extra_model_paths.yaml`` for these names are kept."""
    for name in (LLM_FOLDER, LORA_FOLDER):
        folder_paths.add_model_folder_path(name, os.path.join(folder_paths.models_dir, name), is_default=True)
        paths, _exts = folder_paths.folder_names_and_paths[name]
        folder_paths.folder_names_and_paths[name] = (paths, {".gguf"})


def model_files() -> list[str]:
    return folder_paths.get_filename_list(LLM_FOLDER)


def lora_files() -> list[str]:
    return [NONE, *folder_paths.get_filename_list(LORA_FOLDER)]


def bible_files() -> list[str]:
    """``.json`` files in ``input/mangaka_bibles`` (where a studio keeps its bibles), after ``none``."""
    folder = Path(folder_paths.get_input_directory()) / BIBLE_FOLDER
    found = (
        sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.json")) if folder.is_dir() else []
    )
    return [NONE, *found]


def bible_path(name: str) -> Path:
    """The file ``name`` of ``input/mangaka_bibles``; ``InputError`` for a name outside it."""
    folder = (Path(folder_paths.get_input_directory()) / BIBLE_FOLDER).resolve()
    path = (folder / name).resolve()
    if folder not in path.parents:
        raise InputError(f"bible file {name!r} points outside {folder}")
    return path


def missing_file_message(folder: str, name: str) -> str | None:
    """A message naming the file, the folders searched and what is there; None when found."""
    if folder_paths.get_full_path(folder, name):
        return None
    present = folder_paths.get_filename_list(folder)
    where = ", ".join(folder_paths.get_folder_paths(folder))
    have = ", ".join(present[:12]) if present else "no .gguf files"
    return f"{name} not found in {where}; these are there: {have}. Put the .gguf file there and refresh."


def full_path(folder: str, name: str) -> Path:
    return Path(folder_paths.get_full_path_or_raise(folder, name))


class Progress:
    """A ComfyUI progress bar fed by the engine's ``on_progress`` (throttled to ~10 updates/s)."""

    def __init__(self, total: int = 100) -> None:
        self.bar = comfy.utils.ProgressBar(total)
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self._last >= 0.1:
            self._last = now
            self.bar.update_absolute(done, total)  # raises if the user interrupted


def progress() -> ProgressFn:
    return Progress()


def cancel_requested() -> CancelFn:
    return comfy.model_management.processing_interrupted


@contextlib.contextmanager
def comfy_interrupts() -> Iterator[None]:
    """The engine's ``Cancelled`` becomes ComfyUI's interrupt (``execution_interrupted``)."""
    try:
        yield
    except Cancelled:
        comfy.model_management.interrupt_current_processing(False)
        raise comfy.model_management.InterruptProcessingException() from None


def unique_output_path(prefix: str, suffix: str) -> Path:
    """A new file in ComfyUI's output folder: ``<prefix>_00001<suffix>``, never an existing one."""
    out = Path(folder_paths.get_output_directory()).resolve()
    target = (out / prefix).resolve()
    if out not in target.parents:
        raise ValueError(f"filename prefix {prefix!r} points outside ComfyUI's output folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    stem = target.name
    existing = [p.name for p in target.parent.glob(f"{stem}_*{suffix}")]
    counter = 1 + max(
        (int(n[len(stem) + 1 : -len(suffix)]) for n in existing if n[len(stem) + 1 : -len(suffix)].isdigit()),
        default=0,
    )
    return target.parent / f"{stem}_{counter:05d}{suffix}"


def unique_temp_path(prefix: str, suffix: str) -> Path:
    """A new file name in ComfyUI's temp folder (emptied when ComfyUI starts): for a VIDEO output
    that Save Video copies into the output folder."""
    folder = Path(folder_paths.get_temp_directory())
    folder.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"{prefix}_", suffix=suffix, dir=folder)
    os.close(fd)
    return Path(name)


def save_output(text: str, prefix: str, suffix: str) -> tuple[Path, dict[str, Any]]:
    """Write ``text`` atomically to a new ``<prefix>_NNNNN<suffix>`` in the output folder (never
    over a file); the path, and the file as a history item (``filename``, ``subfolder``, ``type``)
    that ``python -m mangaka queue`` downloads."""
    for _ in range(100):
        path = unique_output_path(prefix, suffix)
        try:
            write_atomic(path, text, overwrite=False)
            break
        except FileExistsError:
            continue  # another run took that number between our look and our write
    else:
        raise RuntimeError(f"could not find a free file name for {prefix}")
    out = Path(folder_paths.get_output_directory()).resolve()
    item = {"filename": path.name, "subfolder": path.parent.relative_to(out).as_posix(), "type": "output"}
    return path, item
