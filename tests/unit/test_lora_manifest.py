"""``eval`` records its scores in a LoRA's manifest (``NAME.gguf.manifest.json``): appended, written
atomically, never twice for the same eval, and a manifest that cannot be read is named."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from mangaka.errors import LoraError
from mangaka.llm.lora import manifest_path, record_eval


def a_lora(tmp_path: Path, manifest: dict | str | None) -> Path:
    lora = tmp_path / "manga.gguf"
    lora.write_bytes(b"GGUF")
    if manifest is not None:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        manifest_path(lora).write_text(text, encoding="utf-8")
    return lora


def record(when: str, valid: float = 1.0) -> dict:
    mean = {"valid": {"mean": valid, "spread": None}}
    return {"recorded": when, "set": "gold", "chapters": ["en3"], "seeds": [0],
            "settings": {"lora": "manga.gguf"}, "mean": mean}  # fmt: skip


def test_records_are_appended_and_the_same_eval_is_kept_once(tmp_path):
    lora = a_lora(tmp_path, {"version": 1, "lora": "manga.gguf", "eval": None, "base": {"folder": "B"}})
    assert record_eval(lora, record("2026-12-01T10:00:00+00:00")) == manifest_path(lora)
    record_eval(lora, record("2026-12-01T11:00:00+00:00"))  # the same eval again: not added
    record_eval(lora, record("2026-12-01T12:00:00+00:00", valid=0.5))
    manifest = json.loads(manifest_path(lora).read_text(encoding="utf-8"))
    assert [e["recorded"][11:13] for e in manifest["eval"]] == ["10", "12"]
    assert manifest["base"] == {"folder": "B"}  # the rest is kept as it was
    assert sorted(os.listdir(tmp_path)) == ["manga.gguf", "manga.gguf.manifest.json"]  # no temporary left


def test_a_lora_without_a_manifest_records_nothing(tmp_path):
    lora = a_lora(tmp_path, None)
    assert record_eval(lora, record("2026-12-01T10:00:00+00:00")) is None
    assert not manifest_path(lora).exists()


def test_a_damaged_manifest_is_named_and_left_as_it_is(tmp_path):
    lora = a_lora(tmp_path, "{not json")
    named = re.escape("manga.gguf.manifest.json (the manifest of LoRA manga.gguf) cannot be read")
    with pytest.raises(LoraError, match=named):
        record_eval(lora, record("2026-12-01T10:00:00+00:00"))
    assert manifest_path(lora).read_text(encoding="utf-8") == "{not json"
