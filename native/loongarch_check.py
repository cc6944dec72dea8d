"""LoongArch proof without LoongArch hardware: cross-compile the pinned llama.cpp for loongarch64
with LSX and LASX, count the LASX instructions in the code, and run it under
``qemu-loongarch64 -cpu la464``.

    .venv/bin/python native/loongarch_check.py --prepare  # install time: fetch the tools, build
    .venv/bin/python native/loongarch_check.py            # one JSON object; exit 1 on a failed check
    .venv/bin/python native/loongarch_check.py --offline  # the same, but never fetch nor build (CI)

What it shows (ARCHITECTURE.md, "LoongArch without LoongArch hardware", has the recipe):

1. the object code carries LASX (``xv*``) and LSX (``v*``) instructions (capstone's LoongArch
   disassembler over ``llama-simple``'s ``.text``);
2. ggml's own ``test-quantize-fns`` passes under emulation;
3. the tiny ``qwen35moe`` model generates, greedily, byte for byte what the x86-64 build
   (llama-cpp-python in this venv) generates;
4. the same binary under ``-cpu la464,lasx=off`` dies with SIGILL: the LASX paths really ran.

Tools, all fetched once into ``~/.cache/mangaka/loongarch/``: PyPI ``ziglang`` (clang for
loongarch64, static musl) and ``capstone6pwndbg``; Debian bookworm-backports ``qemu-user`` 10
(Debian 12's own 7.2 lacks LASX), downloaded with apt through a private sources list and unpacked
with ``dpkg-deb -x``, nothing installed system-wide. The build (about 12 minutes on 2 cores) is
cached by version and options. ``--prepare`` does the fetching and building only, so that
``tests/run.sh`` can do it at install time (in the background, beside ComfyUI's download) and the
test itself, with ``--offline``, downloads nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # loaded by path rather than run
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import native_common
from native_common import procs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ZIG = "ziglang==0.17.1"
CAPSTONE = "capstone6pwndbg==8.0.0"
BACKPORTS = (
    "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
    "http://deb.debian.org/debian bookworm-backports main\n"
)
OPTIONS = [
    "-DCMAKE_SYSTEM_NAME=Linux",
    "-DCMAKE_SYSTEM_PROCESSOR=loongarch64",
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",
    "-DGGML_LSX=ON",
    "-DGGML_LASX=ON",
    "-DGGML_OPENMP=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=ON",
    "-DLLAMA_BUILD_SERVER=OFF",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DCMAKE_EXE_LINKER_FLAGS=-static",
]
TARGETS = ("test-quantize-fns", "llama-simple")
# llama.cpp's CMake links every test to its "common" library (and that to an HTTP library): 55% of
# the build's CPU time for a test that only uses ggml. So test-quantize-fns is compiled here, by
# hand, against ggml's three static libraries; llama-simple needs only libllama and ggml.
TEST_SOURCE = "tests/test-quantize-fns.cpp"
GGML_LIBS = ("ggml/src/libggml.a", "ggml/src/libggml-cpu.a", "ggml/src/libggml-base.a")
RECIPE = 2  # bump when the build steps change: the build folder is keyed by it
PROMPT = "Hello lantern"
N_PREDICT = 24
# A wrapper around zig's clang: ggml passes -march=loongarch64, which zig reads as its own CPU
# name; plain generic_la64 silently picks soft-float, so ask for the F and D extensions.
WRAPPER = """#!/usr/bin/env bash
args=()
for a in "$@"; do
  case "$a" in
    -march=loongarch64) args+=("-mcpu=generic_la64+f+d") ;;
    *) args+=("$a") ;;
  esac
done
export ZIG_GLOBAL_CACHE_DIR="{zig_cache}"  # zig's libc build lives with ours, not in ~/.cache/zig
exec "{python}" -m ziglang {tool} -target loongarch64-linux-musl "${{args[@]}}"
"""

log = logging.getLogger("mangaka.loongarch")


class CheckError(RuntimeError):
    pass


class NotPrepared(CheckError):
    """``--offline`` found a tool or the build missing."""

    def __init__(self, what: str, where: Path) -> None:
        super().__init__(
            f"{what} is not in {where}: run `.venv/bin/python native/loongarch_check.py --prepare` "
            "first (it downloads the tools and builds; tests/run.sh does it at install time)"
        )


def run(cmd: list[str], what: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a step; its own output goes to stderr unless captured (stdout is the JSON result)."""
    log.info("%s", what)
    if "capture_output" not in kwargs and "stdout" not in kwargs:
        kwargs["stdout"] = sys.stderr
    done = procs.run(cmd, **kwargs)
    if done.returncode != 0:
        raise CheckError(f"{what} failed (exit {done.returncode}): {' '.join(map(str, cmd))}")
    return done


def cache() -> Path:
    return native_common.cache_root() / "loongarch"


def tools_venv(root: Path, fetch: bool = True) -> Path:
    venv = root / "tools-venv"
    python = venv / "bin" / "python"
    marker = venv / "installed.txt"
    if not (marker.is_file() and marker.read_text() == f"{ZIG} {CAPSTONE}"):
        if not fetch:
            raise NotPrepared(f"the tools venv ({ZIG}, {CAPSTONE})", venv)
        run([sys.executable, "-m", "venv", str(venv)], "creating the tools venv")
        run(
            [str(python), "-m", "pip", "install", "--quiet", ZIG, CAPSTONE],
            f"installing {ZIG} and {CAPSTONE}",
        )
        marker.write_text(f"{ZIG} {CAPSTONE}")
    return python


def qemu(root: Path, fetch: bool = True, name: str = "qemu-loongarch64") -> Path:
    """One of qemu-user 10's emulators (``qemu-loongarch64``, ``qemu-x86_64``…)."""
    binary = root / "qemu" / "usr" / "bin" / name
    if binary.is_file():
        return binary
    if not fetch:
        raise NotPrepared("qemu-user 10 (bookworm-backports)", root / "qemu")
    missing = [tool for tool in ("apt-get", "dpkg-deb") if shutil.which(tool) is None]
    if missing or not Path("/usr/share/keyrings/debian-archive-keyring.gpg").is_file():
        raise CheckError(
            "qemu-user 10 is fetched from Debian's bookworm-backports with apt-get and dpkg-deb and "
            f"Debian's archive keyring, which this system lacks ({', '.join(missing) or 'the keyring'}): "
            f"on another system, unpack a qemu-user >= 10 so that {binary} exists"
        )
    work = root / "apt"
    for sub in ("lists/partial", "cache/archives/partial", "debs"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    sources = work / "backports.list"
    sources.write_text(BACKPORTS)
    options = [
        "-o",
        f"Dir::Etc::SourceList={sources}",
        "-o",
        "Dir::Etc::SourceParts=/dev/null",
        "-o",
        f"Dir::State::Lists={work / 'lists'}",
        "-o",
        f"Dir::Cache={work / 'cache'}",
    ]
    run(["apt-get", *options, "update"], "reading bookworm-backports' package list", capture_output=True)
    run(
        ["apt-get", *options, "download", "qemu-user"],
        "downloading qemu-user from bookworm-backports",
        cwd=work / "debs",
        capture_output=True,
    )
    deb = next((work / "debs").glob("qemu-user_*.deb"))
    staged = root / "qemu.partial"
    if staged.exists():
        procs.run(["rm", "-rf", str(staged)], check=True)
    run(["dpkg-deb", "-x", str(deb), str(staged)], "unpacking qemu-user")
    if (root / "qemu").exists():  # an older unpack without this emulator
        procs.run(["rm", "-rf", str(root / "qemu")], check=True)
    os.replace(staged, root / "qemu")  # whole or not at all
    return binary


def source(root: Path, fetch: bool = True) -> Path:
    bench = native_common.load_sibling("llama_bench", "mangaka_native_llama_bench_la")
    version = bench.load_install().PINNED_VERSION
    tree = root / f"src-{version}" / "vendor" / "llama.cpp"
    if not tree.is_dir():
        if not fetch:
            raise NotPrepared(f"llama-cpp-python {version}'s llama.cpp source", tree)
        tarball = bench.fetch_sdist(sys.executable, version, native_common.cache_root())
        staged = root / f"src-{version}.partial"
        if staged.exists():
            procs.run(["rm", "-rf", str(staged)], check=True)
        with tarfile.open(tarball) as archive:
            members = [m for m in archive.getmembers() if "/vendor/llama.cpp/" in m.name]
            for member in members:
                member.name = member.name.split("/", 1)[1]
            archive.extractall(staged, members=members, filter="data")
        (staged / "vendor" / "llama.cpp" / "ggml" / "ggml.pc.in").touch()  # CMake wants it
        os.replace(staged, root / f"src-{version}")  # whole or not at all
    return tree


def build(root: Path, tree: Path, python: Path, fetch: bool = True) -> Path:
    key = hashlib.sha256(json.dumps([str(tree), OPTIONS, ZIG, RECIPE]).encode()).hexdigest()[:12]
    out = root / f"build-{key}"
    if all((out / "bin" / t).is_file() for t in TARGETS):
        return out / "bin"
    if not fetch:
        raise NotPrepared("the loongarch64 build of test-quantize-fns and llama-simple", out)
    for tool, name in (("cc", "zcc"), ("c++", "zcxx")):
        wrapper = root / name
        wrapper.write_text(WRAPPER.format(python=python, tool=tool, zig_cache=root / "zig-cache"))
        wrapper.chmod(0o755)
    run(
        [
            "cmake",
            "-S",
            str(tree),
            "-B",
            str(out),
            "-G",
            "Ninja",
            f"-DCMAKE_C_COMPILER={root / 'zcc'}",
            f"-DCMAKE_CXX_COMPILER={root / 'zcxx'}",
            *OPTIONS,
        ],
        "configuring llama.cpp for loongarch64 (zig builds its libc once)",
    )
    run(
        ["cmake", "--build", str(out), "--target", "llama-simple", "-j", str(os.cpu_count() or 1)],
        "building llama-simple and ggml for loongarch64 (minutes)",
    )
    run(
        [
            str(root / "zcxx"),
            "-O3",
            "-DNDEBUG",
            "-std=c++17",
            "-I",
            str(tree / "ggml" / "include"),
            str(tree / TEST_SOURCE),
            *(str(out / lib) for lib in GGML_LIBS),
            "-static",
            "-o",
            str(out / "bin" / "test-quantize-fns"),
        ],
        "compiling ggml's test-quantize-fns against ggml alone",
    )
    return out / "bin"


# Run by the tools' python (capstone): an ELF64 file's .text, for the instruction counts here and
# in native/cpu_check.py.
TEXT_SECTION = """
import struct
def text_section(path):
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    size, count, names = struct.unpack_from("<HHH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * size) for i in range(count)]
    strtab = secs[names][4]
    name = lambda off: data[strtab + off : data.index(b"\\0", strtab + off)].decode()
    text = next(s for s in secs if name(s[0]) == ".text")
    return data[text[4] : text[4] + text[5]], text[3]  # the code and its address
"""

COUNT = (
    TEXT_SECTION
    + """
import collections, json, sys
import capstone6pwndbg as capstone
md = capstone.Cs(capstone.CS_ARCH_LOONGARCH, capstone.CS_MODE_LOONGARCH64)
md.skipdata = True
found = collections.Counter()
for _a, _s, mnemonic, _o in md.disasm_lite(*text_section(sys.argv[1])):
    found["lasx" if mnemonic.startswith("xv") else "lsx" if mnemonic.startswith("v") else "other"] += 1
print(json.dumps(found))
"""
)

REFERENCE = """
import sys
from mangaka.llm.base import PRESETS
from mangaka.llm.decode import decode
from mangaka.llm.inprocess import LoadOptions, load_model
llama = load_model(sys.argv[1], LoadOptions(n_ctx=512, n_threads=1)).llama
prompt = sys.argv[2].encode()
tokens = llama.tokenize(prompt, add_bos=True, special=True)
out = decode(llama, tokens, 0, sampling=PRESETS["greedy"], constraint=None, budget=int(sys.argv[3]))
sys.stdout.buffer.write(prompt + b"".join(llama.detokenize([t], special=True) for t in out.tokens) + b"\\n")
"""


def prepare(root: Path, fetch: bool = True) -> tuple[Path, Path, Path]:
    """(the tools' python, qemu-loongarch64, the folder of the loongarch64 binaries)."""
    python = tools_venv(root, fetch)
    emulator = qemu(root, fetch)
    return python, emulator, build(root, source(root, fetch), python, fetch)


def tiny_model(root: Path) -> Path:
    """The tiny random-weight qwen35moe model (written here, by the pack's own writer)."""
    model = root / "tiny-qwen35moe.gguf"
    if not model.is_file():
        run(
            [
                sys.executable,
                "-c",
                "import sys; from mangaka.devtools.tiny_models import write_model; "
                "write_model(sys.argv[1], 'qwen35moe', context_length=32768)",
                str(model),
            ],
            "writing the tiny qwen35moe model",
            cwd=ROOT,
        )
    return model


def reference(model: Path, prompt: str, n_predict: int) -> bytes:
    """What this machine's llama-cpp-python generates greedily: the prompt, then the tokens."""
    return run(
        [sys.executable, "-c", REFERENCE, str(model), prompt, str(n_predict)],
        "x86-64 reference tokens",
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout


def quantize_tests(root: Path, fetch: bool = True) -> dict:
    """ggml's quantisation tests (``test-quantize-fns``) under ``qemu -cpu la464``, alone: what
    :func:`check` runs beside the generation, for a caller that runs them earlier (tests/run.sh, at
    the lowest priority while the other tests run) and hands the result to ``check``."""
    _, emulator, binaries = prepare(root, fetch)
    log.info("running test-quantize-fns under qemu -cpu la464 (minutes)")
    done = procs.run(
        [str(emulator), "-cpu", "la464", str(binaries / "test-quantize-fns")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    return {"returncode": done.returncode, "output": done.stdout[-2000:], "binaries": str(binaries)}


def check(root: Path, fetch: bool = True, quantized: dict | None = None) -> dict:
    """The whole proof; ``quantized``: the result of :func:`quantize_tests` on the same build, when
    they ran already (else they run here, beside the generation)."""
    python, emulator, binaries = prepare(root, fetch)
    if quantized is not None and quantized.get("binaries") != str(binaries):
        given = quantized.get("binaries")
        raise CheckError(f"the quantisation tests given ran on {given}, not on {binaries}")
    started = time.monotonic()
    result: dict = {
        "qemu": procs.run([str(emulator), "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    }
    counted = run(
        [str(python), "-c", COUNT, str(binaries / "llama-simple")],
        "counting LASX instructions",
        capture_output=True,
        text=True,
    )
    result["instructions"] = json.loads(counted.stdout)
    # ggml's quantisation tests take minutes under emulation, on one core: the generation runs
    # beside them.
    quantize = None
    if quantized is None:
        log.info("running test-quantize-fns under qemu -cpu la464 (minutes)")
        quantize = procs.popen(
            [str(emulator), "-cpu", "la464", str(binaries / "test-quantize-fns")],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        model = tiny_model(root)
        simple = [str(binaries / "llama-simple"), "-m", str(model), "-n", str(N_PREDICT), PROMPT]
        log.info("generating under qemu -cpu la464")
        la = procs.run([str(emulator), "-cpu", "la464", *simple], capture_output=True, timeout=600)
        x86 = reference(model, PROMPT, N_PREDICT)
        result["generation_identical"] = la.returncode == 0 and la.stdout == x86
        result["generated"] = la.stdout.decode("utf-8", errors="replace").strip()
        log.info("the same binary under qemu -cpu la464,lasx=off")
        off = procs.run([str(emulator), "-cpu", "la464,lasx=off", *simple], capture_output=True, timeout=600)
        result["lasx_off_returncode"] = off.returncode  # 128 + 4 (SIGILL) in a shell, -4 from Python
        if quantize is not None:
            output, _ = quantize.communicate(timeout=1800)
            quantized = {"returncode": quantize.returncode, "output": output[-2000:]}
    finally:
        if quantize is not None:
            procs.end_group(quantize)
    assert quantized is not None
    result["test_quantize_fns"] = quantized["returncode"]
    if quantized["returncode"] != 0:
        result["test_quantize_fns_output"] = quantized["output"]
    result["seconds"] = round(time.monotonic() - started, 1)
    result["ok"] = (
        result["instructions"].get("lasx", 0) > 0
        and quantized["returncode"] == 0
        and result["generation_identical"]
        and off.returncode in (-4, 132)
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=cache())
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--prepare", action="store_true", help="fetch the tools and build; run nothing")
    mode.add_argument("--offline", action="store_true", help="never fetch nor build: fail if not prepared")
    parser.add_argument(
        "--quantize-out",
        type=Path,
        metavar="FILE",
        help="with --prepare: then run ggml's quantisation tests and write their result to FILE (JSON)",
    )
    parser.add_argument(
        "--quantize-from",
        type=Path,
        metavar="FILE",
        help="the quantisation tests' result written by --prepare --quantize-out, instead of running them",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args.cache.mkdir(parents=True, exist_ok=True)
    try:
        if args.prepare:
            started = time.monotonic()
            _, _, binaries = prepare(args.cache)
            log.info("prepared in %.0f s: %s", time.monotonic() - started, binaries)
            if args.quantize_out:
                result = quantize_tests(args.cache, fetch=False)
                partial = args.quantize_out.with_name(args.quantize_out.name + ".partial")
                partial.write_text(json.dumps(result) + "\n", encoding="utf-8")
                os.replace(partial, args.quantize_out)  # whole or not at all
                seconds = time.monotonic() - started
                log.info("test-quantize-fns: exit %d; %.0f s in all", result["returncode"], seconds)
            return 0
        quantized = None
        if args.quantize_from:
            quantized = json.loads(args.quantize_from.read_text(encoding="utf-8"))
        result = check(args.cache, fetch=not args.offline, quantized=quantized)
    except CheckError as exc:
        log.error("%s", exc)
        return 2
    sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
