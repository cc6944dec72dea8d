"""LoRA adapters on a loaded model: attached after load (the model's mmap kept), rescaled or
detached just before each call, so handles with different adapters share one loaded model."""

from __future__ import annotations

import ctypes
import json
import logging
from pathlib import Path
from typing import Any

from ..errors import LoraError
from ..fileio import write_atomic
from ..jsontext import MAX_DEPTH, exceeds_depth
from .loading import LoadedModel, check_lora_file
from .native import import_llama_cpp
from .options import RUN_OPTIONS

# The in-process backend's messages keep the one logger name they had before it was split.
log = logging.getLogger(__name__.rpartition(".")[0] + ".inprocess")


def check_lora_scale(scale: Any, label: str | None = None) -> float:
    """``scale`` as a float in its declared range (``options.py``), or ``InputError`` about
    ``lora_scale``, named ``label`` (the field's own name by default)."""
    return RUN_OPTIONS["lora_scale"].check(scale, label)


def manifest_path(lora: Path) -> Path:
    """Where ``lora/train.py`` writes a LoRA's manifest: ``NAME.gguf.manifest.json`` beside it."""
    return lora.with_name(lora.name + ".manifest.json")


def read_manifest(lora: Path) -> dict[str, Any] | None:
    """The LoRA's manifest, or None when it has none; ``LoraError`` when it cannot be read (not a
    file, not UTF-8, not JSON, nested past ``MAX_DEPTH``, not an object)."""
    path = manifest_path(lora)
    if not path.exists():
        return None
    if not path.is_file():  # a folder, a FIFO (never opened: it would wait for a writer)
        raise LoraError(
            f"{path} (the manifest of LoRA {lora.name}) is not a file; "
            "restore the manifest from the training run or delete it"
        )
    try:
        text = path.read_text(encoding="utf-8")
        if exceeds_depth(text):
            raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        manifest = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LoraError(
            f"{path.name} (the manifest of LoRA {lora.name}) cannot be read ({exc}); "
            "restore it from the training run or delete it"
        ) from None
    if not isinstance(manifest, dict):
        raise LoraError(f"{path.name} is not a LoRA manifest (a JSON object); restore it or delete it")
    return manifest


def record_eval(lora: Path, record: dict[str, Any]) -> Path | None:
    """Add ``record`` (an ``eval`` of the LoRA) to its manifest's ``eval`` list, rewritten
    atomically; the manifest's path, or ``None`` when the LoRA has none. A record equal to one
    already there but for its ``recorded`` time (the same eval again) is not added twice.
    ``LoraError`` when the manifest cannot be read or holds what UTF-8 cannot write back (a lone
    surrogate escape), ``OSError`` when it cannot be written."""
    manifest = read_manifest(lora)
    if manifest is None:
        return None
    found = manifest.get("eval")
    evals = found if isinstance(found, list) else []  # null: not evaluated yet

    def same(a: Any) -> bool:
        return isinstance(a, dict) and {k: v for k, v in a.items() if k != "recorded"} == {
            k: v for k, v in record.items() if k != "recorded"
        }

    if not any(same(e) for e in evals):
        manifest["eval"] = [*evals, record]
        try:
            raw = (json.dumps(manifest, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a "\\ud800" escape in the file: no character, no UTF-8
            raise LoraError(
                f"{manifest_path(lora).name} (the manifest of LoRA {lora.name}) holds a lone surrogate "
                "escape (\\ud800 to \\udfff), which is not text; restore it from the training run"
            ) from None
        write_atomic(manifest_path(lora), raw)
    return manifest_path(lora)


# The base's shape as the manifest records it (from its config.json) and as its GGUF stores it.
_SHAPE_KEYS = (
    ("hidden", "embedding_length", "hidden size"),
    ("experts", "expert_count", "experts"),
    ("expert_ffn", "expert_feed_forward_length", "expert width"),
)


def check_manifest(model: LoadedModel, lora: Path) -> None:
    """Refuse a LoRA whose manifest names a base of another shape than ``model``: layers,
    hidden size, experts and expert width, compared with the model's GGUF header. A LoRA without
    a manifest (or an older one without ``base.shape``) is checked by llama.cpp alone."""
    manifest = read_manifest(lora)
    base = manifest.get("base") if manifest else None
    shape = base.get("shape") if isinstance(base, dict) else None
    if not isinstance(shape, dict):
        return
    meta, arch = model.info.metadata, model.architecture
    differences = []
    layers = shape.get("layers")
    if isinstance(layers, int):
        # The converter counts multi-token-prediction layers as blocks unless it drops them.
        mtp = shape.get("mtp_layers")
        allowed = {layers, layers + (mtp if isinstance(mtp, int) else 0)}
        have = meta.get(f"{arch}.block_count")
        if have is not None and int(have) not in allowed:
            differences.append(f"{layers} layers, not {have}")
    for key, gguf_key, label in _SHAPE_KEYS:
        want, have = shape.get(key), meta.get(f"{arch}.{gguf_key}")
        if isinstance(want, int) and have is not None and int(have) != want:
            differences.append(f"{label} {want}, not {have}")
    if differences:
        name = base.get("folder") or "another model"
        raise LoraError(
            f"LoRA {lora.name} was trained on {name} ({'; '.join(differences)} as in "
            f"{model.path.name}), per {manifest_path(lora).name}; attach it to the GGUF of {name}, "
            "or train a LoRA on this model's Hugging Face weights"
        )


def check_adapter(model: LoadedModel, lora: Path) -> None:
    """``lora`` is a LoRA adapter GGUF for ``model``'s architecture (its header only is read) and,
    when it has a manifest, was trained on a base of ``model``'s shape."""
    check_lora_file(lora, model.architecture, model.path.name)
    check_manifest(model, lora)


def apply_lora(model: LoadedModel, lora: Path | None, scale: float = 1.0) -> None:
    """Attach, rescale or detach the model's LoRA; resets the KV cache when it changes."""
    llama_cpp = import_llama_cpp()
    wanted = (lora.resolve(), float(scale)) if lora is not None and scale != 0.0 else None
    if wanted == model.active_lora:
        return
    ctx = model.context
    if wanted is None:
        rc = llama_cpp.llama_set_adapters_lora(ctx, None, 0, None)
    else:
        path, value = wanted
        adapter = model.adapters.get(path)
        if adapter is None:
            check_adapter(model, path)
            adapter = llama_cpp.llama_adapter_lora_init(model.llama.model, str(path).encode())
            if not adapter:
                manifest = read_manifest(path) or {}
                base = manifest.get("base") if isinstance(manifest.get("base"), dict) else {}
                trained_on = f" (trained on {base['folder']}, per its manifest)" if base.get("folder") else ""
                raise LoraError(
                    f"llama.cpp could not load LoRA {path}{trained_on}: its tensors do not match "
                    f"{model.path.name}; attach it to the model it was trained on"
                )
            model.adapters[path] = adapter
        arr = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(value)
        rc = llama_cpp.llama_set_adapters_lora(ctx, arr, 1, scales)
    if rc != 0:
        raise LoraError(f"llama.cpp refused to set the LoRA adapters (code {rc})")
    model.active_lora = wanted
    model.llama.reset()  # cached KV and snapshots were computed with the old weights
    model.prefix_cache.clear()
    log.info("LoRA %s", f"{wanted[0].name} at {wanted[1]}" if wanted else "detached")
