#!/usr/bin/env python3
"""The portable ``cpu`` wheel, checked: the llama-cpp-python this interpreter runs is the wheel
``native/install.py --target cpu`` built, its code uses nothing beyond AVX2, and it runs on an
AVX2 CPU without AVX-512 and, as documented, not below.

    .venv/bin/python native/cpu_check.py --prepare  # install time: fetch capstone and qemu-user 10
    .venv/bin/python native/cpu_check.py            # one JSON object; exit 1 on a failed check
    .venv/bin/python native/cpu_check.py --offline  # the same, but never fetch (the CI test)

What it shows (x86-64 only):

1. provenance: pip's ``direct_url.json`` for llama-cpp-python names a wheel in install.py's cache
   folder for the ``cpu`` target with today's flags (the cache key), and that file's SHA-256 is the
   one pip recorded, so the tests that ran in this environment ran on that very wheel;
2. instructions: capstone's x86-64 disassembler over the ``.text`` of every library in the wheel
   finds AVX2 (``ymm``) code and no AVX-512 (``zmm`` registers, ``k`` mask registers): a wheel
   built with ``-march=native`` on an AVX-512 machine would fail here (and on the user's CPU);
3. under ``qemu-x86_64 -cpu Haswell`` (AVX2, FMA, F16C, BMI2, no AVX-512) the tiny ``qwen35moe``
   model generates, greedily, byte for byte what it generates natively;
4. under ``-cpu SandyBridge`` (AVX, no AVX2) Python, numpy and ``import llama_cpp`` run, and the
   generation dies with SIGILL: AVX2 is the floor, as docs/native.md says, and ``python -m mangaka
   doctor`` reports such a CPU as an error (``install.py`` then builds for that CPU instead).

The tools are the ones ``native/loongarch_check.py`` uses, in the same cache folder
(``~/.cache/mangaka/loongarch/``): PyPI ``capstone6pwndbg`` and qemu-user 10 from Debian's
bookworm-backports, unpacked without installing anything system-wide.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import sys
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote, urlparse

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_common
from native_common import procs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROMPT = "Hello lantern"
N_PREDICT = 24
AVX2_CPU = "Haswell"  # AVX2, FMA, F16C, BMI2; no AVX-512
PRE_AVX2_CPU = "SandyBridge"  # AVX; no AVX2, FMA, F16C
LIBRARIES = ("libggml-base.so", "libggml-cpu.so", "libggml.so", "libllama.so")

log = logging.getLogger("mangaka.cpu_check")

# x86-64 counterpart of loongarch_check's LASX count (after its TEXT_SECTION): AVX-512 needs zmm
# or k (mask) registers.
COUNT = """
import collections, json, re, sys
import capstone6pwndbg as capstone
found = collections.Counter({"avx512": 0, "avx_avx2": 0, "other": 0})
mask = re.compile(r"\\bk[0-7]\\b")
md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
md.skipdata = True
for path in sys.argv[1:]:
    for _a, _s, mnemonic, ops in md.disasm_lite(*text_section(path)):
        if "zmm" in ops or mask.search(ops):
            found["avx512"] += 1
        elif "ymm" in ops:
            found["avx_avx2"] += 1
        else:
            found["other"] += 1
print(json.dumps(found))
"""

IMPORTS = "import numpy, llama_cpp; print(llama_cpp.__version__)"


class CheckError(RuntimeError):
    pass


def _load(name: str) -> ModuleType:
    return native_common.load_sibling(name, f"mangaka_native_{name}_cc")


def installed_wheel(python: str) -> dict:
    """Where ``python``'s llama-cpp-python came from: pip's direct_url.json and its lib folder."""
    try:
        return native_common.installed_wheel(python, must_import=True)
    except native_common.WheelQueryError as exc:
        raise CheckError(f"llama-cpp-python does not import in {python}:\n{exc}") from None


def provenance(python: str, install: ModuleType, cache_root: Path) -> dict:
    """Is the installed llama-cpp-python install.py's cpu wheel, byte for byte?"""
    info = installed_wheel(python)
    direct = info["direct_url"] or {}
    url = direct.get("url", "")
    wheel = Path(unquote(urlparse(url).path)) if url.startswith("file://") else None
    flags = install.cmake_flags("cpu", None)
    expected = install.cache_dir(cache_root, info["version"], "cpu", flags, install.python_tag(python))
    recorded = direct.get("archive_info", {}).get("hashes", {}).get("sha256")
    actual = hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel and wheel.is_file() else None
    return {
        "version": info["version"],
        "wheel": str(wheel) if wheel else url or None,
        "from_native_cpu_cache": wheel is not None and wheel.parent == expected,
        "sha256_matches": actual is not None and actual == recorded,
        "lib": info["lib"],
    }


def check(cache_root: Path, python: str, fetch: bool = True) -> dict:
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise CheckError(f"the portable cpu wheel check is for x86-64, not {platform.machine()}")
    la = _load("loongarch_check")
    install = _load("install")
    root = la.cache()
    tools = la.tools_venv(root, fetch)
    emulator = la.qemu(root, fetch, "qemu-x86_64")
    result: dict = {"provenance": provenance(python, install, cache_root)}
    lib = Path(result["provenance"]["lib"])
    libraries = [str(lib / name) for name in LIBRARIES if (lib / name).is_file()]
    counted = la.run(
        [str(tools), "-c", la.TEXT_SECTION + COUNT, *libraries],
        "counting AVX-512 and AVX2 instructions",
        capture_output=True,
        text=True,
    )
    result["instructions"] = json.loads(counted.stdout)
    result["libraries"] = [Path(p).name for p in libraries]

    model = la.tiny_model(root)
    native = la.reference(model, PROMPT, N_PREDICT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    generate = [python, "-c", la.REFERENCE, str(model), PROMPT, str(N_PREDICT)]
    log.info("generating under qemu-x86_64 -cpu %s", AVX2_CPU)
    avx2 = procs.run(
        [str(emulator), "-cpu", AVX2_CPU, *generate], capture_output=True, env=env, cwd=ROOT, timeout=600
    )
    result["avx2_cpu"] = AVX2_CPU
    result["avx2_cpu_identical"] = avx2.returncode == 0 and avx2.stdout == native
    result["generated"] = native.decode("utf-8", errors="replace").strip()
    log.info("the same under -cpu %s (no AVX2)", PRE_AVX2_CPU)
    imports = procs.run(
        [str(emulator), "-cpu", PRE_AVX2_CPU, python, "-c", IMPORTS],
        capture_output=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    old = procs.run(
        [str(emulator), "-cpu", PRE_AVX2_CPU, *generate], capture_output=True, env=env, cwd=ROOT, timeout=600
    )
    result["pre_avx2_cpu"] = PRE_AVX2_CPU
    result["pre_avx2_imports"] = imports.returncode == 0
    result["pre_avx2_returncode"] = old.returncode  # -4: SIGILL
    p = result["provenance"]
    result["ok"] = (
        p["from_native_cpu_cache"]
        and p["sha256_matches"]
        and result["instructions"].get("avx512", 0) == 0
        and result["instructions"].get("avx_avx2", 0) > 0
        and result["avx2_cpu_identical"]
        and result["pre_avx2_imports"]
        and old.returncode in (-4, 132)
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose wheel is checked")
    parser.add_argument(
        "--cache",
        type=Path,
        default=native_common.cache_root(),
        help="native/install.py's cache root (its wheels/ folder)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--prepare", action="store_true", help="fetch capstone and qemu-user; run nothing")
    mode.add_argument("--offline", action="store_true", help="never fetch: fail if not prepared")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.prepare:
            la = _load("loongarch_check")
            root = la.cache()
            root.mkdir(parents=True, exist_ok=True)
            la.tools_venv(root)
            log.info("prepared: %s", la.qemu(root, name="qemu-x86_64"))
            return 0
        result = check(args.cache, args.python, fetch=not args.offline)
    except (CheckError, RuntimeError) as exc:
        log.error("%s", exc)
        return 2
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
