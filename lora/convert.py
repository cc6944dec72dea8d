"""llama.cpp's converters, run from the llama-cpp-python sdist: a Hugging Face model or a PEFT
adapter to GGUF.

The converters (``convert_hf_to_gguf.py``, ``convert_lora_to_gguf.py``, their ``conversion/``
package and ``gguf-py``) are vendored in the llama-cpp-python sdist that ``native/install.py``
builds from. They are unpacked from that sdist (downloaded into the cache when missing, as the
native builds do) into ``<cache>/convert/llama_cpp_python-<version>/``, never into this
repository, and run there with this Python (which needs torch, transformers, safetensors, numpy:
``lora/requirements.txt``)::

    python lora/convert.py model HF_DIR OUT.gguf
    python lora/convert.py lora ADAPTER_DIR --base HF_DIR OUT.gguf

Two settings the converters take from the model itself, made explicit here:

* ``--pre-tokenizer NAME``: the converter names the tokenizer's pre-tokenizer by hashing how it
  splits a test string and refuses one it does not know. Qwen3.5's own tokenizer is known
  (``qwen35``); a tokenizer made for a test is not, and is named with this option.
* Multi-token-prediction layers: converted when the model's config lists them
  (``mtp_num_hidden_layers``); a model without them (a test model) is converted without.

A converter's failure is a ``ConvertError`` with its last lines; the output is written to a
temporary name and renamed, so a GGUF at the output path is always complete.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

log = logging.getLogger("mangaka.lora")

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py")
PARTS = ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py", "conversion", "gguf-py")
# The architectures this pack writes screenplays with, as their Hugging Face class names.
KNOWN_ARCHITECTURES = ("Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration")

RUNNER = """
import runpy, sys
from pathlib import Path
here = Path(sys.argv[1])
sys.path.insert(0, str(here)); sys.path.insert(1, str(here / "gguf-py"))
import conversion.base as base
pre, no_mtp, script = sys.argv[2], sys.argv[3] == "1", sys.argv[4]
if pre:
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
if no_mtp:
    base.ModelBase.no_mtp = True
sys.argv = [script, *sys.argv[5:]]
runpy.run_path(str(here / script), run_name="__main__")
"""


class ConvertError(Exception):
    """A conversion could not be done; the message names the input and the fix."""


def _native(name: str):
    spec = importlib.util.spec_from_file_location(f"mangaka_native_{name}", ROOT / "native" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


native_common = _native("native_common")
# Children in their own process group, ended whole on a timeout, an interrupt or a failure.
procs = native_common.procs


def llama_version() -> str:
    """The installed llama-cpp-python's version (the converters must match the loader), else the
    version ``native/install.py`` pins."""
    try:
        from importlib.metadata import version

        return version("llama-cpp-python")
    except Exception:  # noqa: BLE001 - not installed in this Python: the pinned version
        return _native("install").PINNED_VERSION


def converters(version: str | None = None) -> Path:
    """The folder holding the converters of llama-cpp-python ``version``, unpacked once."""
    version = version or llama_version()
    common = _native("native_common")
    root = common.cache_root()
    folder = root / "convert" / f"llama_cpp_python-{version}"
    if all((folder / p).exists() for p in PARTS):
        return folder
    sdist = _native("llama_bench").fetch_sdist(sys.executable, version, root)
    prefix = f"llama_cpp_python-{version}/vendor/llama.cpp/"
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".unpack-"))
    try:
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
            wanted = [m for m in members if m.name[len(prefix) :].split("/", 1)[0] in PARTS]
            for m in wanted:
                m.name = m.name[len(prefix) :]
                tar.extract(m, tmp, filter="data")
        if not all((tmp / p).exists() for p in PARTS):
            raise ConvertError(
                f"the llama-cpp-python {version} sdist ({sdist}) has no converters in vendor/llama.cpp"
            )
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("llama.cpp's converters from llama-cpp-python %s: %s", version, folder)
    return folder


def base_config(model_dir: Path) -> dict:
    """The Hugging Face model's ``config.json``; ``ConvertError`` when it is not a model folder."""
    path = model_dir / "config.json"
    if not path.is_file():
        raise ConvertError(
            f"{model_dir} is not a Hugging Face model folder (no config.json); give the base model's folder"
        )
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConvertError(
            f"{path} cannot be read ({exc}); restore the model's config.json (from its Hugging Face page)"
        ) from None
    if not isinstance(config, dict):
        raise ConvertError(
            f"{path} is not a model config (a JSON object); restore it (from the model's Hugging Face page)"
        )
    found = config.get("architectures")
    archs = [a for a in found if isinstance(a, str)] if isinstance(found, list) else []
    if not any(a in KNOWN_ARCHITECTURES for a in archs):
        raise ConvertError(
            f"{model_dir}: architecture {', '.join(archs) or 'unknown'} is not one this pack trains "
            "LoRAs for "
            f"({', '.join(KNOWN_ARCHITECTURES)}); use the Hugging Face weights of Qwen3.5-35B-A3B"
        )
    return config


def base_shape(config: dict) -> dict:
    """The base's shape as the manifest records it, for the pack to compare with a GGUF at attach
    time: layers (plus multi-token-prediction layers, which the converter counts as blocks),
    hidden size, routed experts and their width."""
    text = config.get("text_config")
    text = text if isinstance(text, dict) else config
    return {
        "layers": text.get("num_hidden_layers"),
        "mtp_layers": text.get("mtp_num_hidden_layers") or config.get("mtp_num_hidden_layers") or 0,
        "hidden": text.get("hidden_size"),
        "experts": text.get("num_experts"),
        "expert_ffn": text.get("moe_intermediate_size"),
    }


def has_mtp(config: dict) -> bool:
    text = config.get("text_config")
    text = text if isinstance(text, dict) else config
    return bool(text.get("mtp_num_hidden_layers") or config.get("mtp_num_hidden_layers"))


def run(script: str, args: list[str], *, model_dir: Path, out: Path, pre_tokenizer: str = "") -> Path:
    """Run converter ``script`` with ``args`` (its output path last is ``out``), atomically."""
    config = base_config(model_dir)
    here = converters()
    tmp = out.with_name(f".{out.name}.part")
    cmd = [sys.executable, "-c", RUNNER, str(here), pre_tokenizer, "0" if has_mtp(config) else "1", script]
    cmd += [*args, "--outfile", str(tmp)]
    log.info("converting with llama.cpp's %s", script)
    done = procs.run(cmd, capture_output=True, text=True, env={**os.environ, "NO_LOCAL_GGUF": ""})
    if done.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise ConvertError(f"llama.cpp's {script} failed on {model_dir}:\n{tail}")
    tmp.replace(out)
    return out


def convert_model(model_dir: Path, out: Path, *, outtype: str = "f32", pre_tokenizer: str = "") -> Path:
    """The Hugging Face model in ``model_dir`` as one GGUF at ``out``."""
    return run("convert_hf_to_gguf.py", [str(model_dir), "--outtype", outtype], model_dir=model_dir, out=out,
               pre_tokenizer=pre_tokenizer)  # fmt: skip


def convert_lora(adapter_dir: Path, base_dir: Path, out: Path, *, outtype: str = "f32") -> Path:
    """The PEFT adapter in ``adapter_dir`` (trained on ``base_dir``) as a GGUF LoRA at ``out``."""
    args = ["--base", str(base_dir), "--outtype", outtype, str(adapter_dir)]
    return run("convert_lora_to_gguf.py", args, model_dir=base_dir, out=out)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="python lora/convert.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("model", help="a Hugging Face model folder to one GGUF")
    m.add_argument("model", type=Path)
    m.add_argument("out", type=Path)
    m.add_argument("--outtype", default="f32", choices=["f32", "f16", "bf16", "q8_0"])
    m.add_argument("--pre-tokenizer", default="", help="name the tokenizer's pre-tokenizer (a test model's)")
    a = sub.add_parser("lora", help="a PEFT adapter folder to a GGUF LoRA")
    a.add_argument("adapter", type=Path)
    a.add_argument("out", type=Path)
    a.add_argument("--base", type=Path, required=True, help="the base model's Hugging Face folder")
    a.add_argument("--outtype", default="f32", choices=["f32", "f16", "bf16", "q8_0"])
    args = p.parse_args(argv)
    try:
        if args.what == "model":
            convert_model(args.model, args.out, outtype=args.outtype, pre_tokenizer=args.pre_tokenizer)
        else:
            convert_lora(args.adapter, args.base, args.out, outtype=args.outtype)
    except ConvertError as exc:
        log.error("%s", exc)
        return 1
    log.info("wrote %s", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
