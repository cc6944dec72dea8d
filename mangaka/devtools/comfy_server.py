"""A real ComfyUI server, and a small synchronous client for it: the comfy test tier's (through
``tests/comfy/harness.py``) and the benchmark's ``manga_page`` part.

Standard library and aiohttp only; ComfyUI runs in its own process and interpreter, never
imported here. Run from a checkout: ``tests/comfy_env.py`` (which builds the ComfyUI cache) and
``tests/comfy/tiny_checkpoint.py`` (run under ComfyUI's interpreter) are found by path.

``find_install()`` locates ComfyUI and its python (``MANGAKA_COMFY_DIR`` / ``MANGAKA_COMFY_PYTHON``,
else the cache that ``tests/comfy_env.py`` builds). ``ComfyServer`` starts ``main.py --cpu`` on a
free port with a throwaway ``--base-directory`` whose ``custom_nodes/`` holds symlinks to the packs
under test, captures the server's output to a log file, and offers the client calls the tests
use: ``object_info``, ``post_prompt``, ``run_prompt`` / ``start_prompt`` (websocket messages
collected from before the prompt is posted until it finishes, then ``/history``), ``interrupt``
and ``free``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import procs
from ..paths import PACK_ROOT

log = logging.getLogger(__name__)

CHECKOUT = PACK_ROOT
COMFY_ENV = CHECKOUT / "tests" / "comfy_env.py"
TINY_CHECKPOINT_WRITER = CHECKOUT / "tests" / "comfy" / "tiny_checkpoint.py"
# The folder name the pack gets inside custom_nodes/, like a user's `git clone`.
PACK_FOLDER = "comfyui-mangaka"
START_TIMEOUT = 90.0
# Messages that end a prompt's run. ComfyUI always sends `executing` with node None after
# execution_success / execution_error / execution_interrupted, once /history is written.
FINAL_TYPES = ("execution_success", "execution_error", "execution_interrupted")


class ComfyUnavailable(RuntimeError):
    """ComfyUI (or its venv) is not there and could not be prepared."""


class ComfyStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


@dataclass(frozen=True)
class ComfyInstall:
    comfy_dir: Path
    python: Path
    # The newer frontend's static folder (for ``--front-end-root``), None when it is not there.
    frontend: Path | None = None
    # ComfyUI-Manager's venv, layered over ``python``'s (its python), None when it is not there.
    manager: Path | None = None


def find_install(setup: bool | None = None, timeout: float = 3600.0) -> ComfyInstall:
    """Where ComfyUI and its interpreter are.

    ``MANGAKA_COMFY_DIR`` (and ``MANGAKA_COMFY_PYTHON``, default: this interpreter) win. Otherwise
    ``tests/comfy_env.py`` is run: seconds when its cache is complete, minutes the first time.
    With ``MANGAKA_COMFY_SETUP=0`` (or ``setup=False``) it only checks for a complete cache.
    The newer frontend is ``MANGAKA_COMFY_FRONTEND``, else the one that script unpacked;
    ComfyUI-Manager's python ``MANGAKA_COMFY_MANAGER``, else the one that script installed.
    Raises ComfyUnavailable with the reason.
    """
    env_dir = os.environ.get("MANGAKA_COMFY_DIR")
    if env_dir:
        comfy = Path(env_dir).expanduser().resolve()
        python = Path(os.environ.get("MANGAKA_COMFY_PYTHON") or sys.executable)
        if not (comfy / "main.py").is_file():
            raise ComfyUnavailable(f"MANGAKA_COMFY_DIR={env_dir} has no main.py")
        if not python.exists():
            raise ComfyUnavailable(f"MANGAKA_COMFY_PYTHON={python} does not exist")
        frontend, manager = os.environ.get("MANGAKA_COMFY_FRONTEND"), os.environ.get("MANGAKA_COMFY_MANAGER")
        return ComfyInstall(comfy, python, _path_or_none(frontend), _path_or_none(manager))
    if not COMFY_ENV.is_file():
        raise ComfyUnavailable(f"{COMFY_ENV} is missing: ComfyUI is found from a checkout only")
    if setup is None:
        setup = os.environ.get("MANGAKA_COMFY_SETUP", "1") != "0"
    cmd = [sys.executable, str(COMFY_ENV), "--checkout", str(CHECKOUT)]
    if not setup:
        cmd.append("--check")
    try:
        proc = procs.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ComfyUnavailable(f"{' '.join(cmd)} failed: {exc}") from exc
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-30:])
        raise ComfyUnavailable(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    info = json.loads(lines[-1])
    frontend = os.environ.get("MANGAKA_COMFY_FRONTEND") or info.get("frontend")
    manager = os.environ.get("MANGAKA_COMFY_MANAGER") or info.get("manager")
    return ComfyInstall(
        Path(info["comfy_dir"]), Path(info["python"]), _path_or_none(frontend), _path_or_none(manager)
    )


def _path_or_none(value: str | None) -> Path | None:
    return Path(value) if value else None


def foreign_python_free_env() -> dict[str, str]:
    """This process's environment without what would point another Python at this one's packages
    or settings (``PYTHONPATH``, ``PYTHONHOME``, ``VIRTUAL_ENV``, ``PYTHONSTARTUP``)."""
    foreign = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    return {k: v for k, v in os.environ.items() if k not in foreign}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class RunResult:
    """One prompt's run: every websocket message seen for it, and its /history entry.

    ``status``: "success", "error", "interrupted", "rejected" (400 from /prompt: see
    ``response``), or "timeout".
    """

    prompt_id: str | None
    status: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    history: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    elapsed: float = 0.0

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        """The ``data`` of every message of one type, in order."""
        return [m.get("data", {}) for m in self.messages if m.get("type") == kind]

    @property
    def types(self) -> list[str]:
        return [m.get("type", "?") for m in self.messages]

    @property
    def error(self) -> dict[str, Any] | None:
        errors = self.of_type("execution_error")
        return errors[-1] if errors else None

    @property
    def progress(self) -> list[dict[str, Any]]:
        return self.of_type("progress")

    @property
    def outputs(self) -> dict[str, Any]:
        """``/history`` outputs: {node_id: {"images": [...], ...}}."""
        return (self.history or {}).get("outputs", {})

    def describe(self) -> str:
        """A short account for assertion messages."""
        text = f"prompt {self.prompt_id}: {self.status} after {self.elapsed:.1f} s; messages {self.types}"
        if self.response is not None and self.status == "rejected":
            text += f"\nresponse: {json.dumps(self.response)[:2000]}"
        if self.error:
            err = self.error
            text += (
                f"\n{err.get('node_type')} (node {err.get('node_id')}) raised "
                f"{err.get('exception_type')}: {err.get('exception_message')}\n"
                + "".join(err.get("traceback") or [])[-3000:]
            )
        return text


class PromptRun:
    """A prompt in flight: a background thread holds the websocket and collects messages.

    The websocket is connected (and its first ``status`` message received) before the prompt
    is posted, so no message is missed.
    """

    def __init__(
        self,
        server: ComfyServer,
        prompt: dict[str, Any],
        client_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.server = server
        self.prompt = prompt
        self.client_id = client_id or uuid.uuid4().hex
        self.extra = dict(extra or {})
        self.prompt_id: str | None = None
        self.messages: list[dict] = []
        self.response: dict | None = None
        self.http_status: int | None = None
        self.history: dict | None = None
        self.failure: BaseException | None = None
        self._cond = threading.Condition()
        self._done = False
        self._posted = threading.Event()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._thread_main, name="comfy-ws", daemon=True)
        self._thread.start()
        if not self._posted.wait(60):
            raise TimeoutError("could not connect to the websocket and post the prompt within 60 s")
        if self.failure is not None:
            raise self.failure

    # -- the background thread -----------------------------------------------------------
    def _thread_main(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by wait()/__init__
            self.failure = exc
        finally:
            self._posted.set()
            with self._cond:
                self._done = True
                self._cond.notify_all()

    async def _main(self) -> None:
        import aiohttp

        url = self.server.url
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{url}/ws?clientId={self.client_id}", max_msg_size=0) as ws:
                first = await ws.receive(timeout=30)  # `status`: the socket is registered
                self._record(first)
                body = {"prompt": self.prompt, "client_id": self.client_id, **self.extra}
                async with session.post(f"{url}/prompt", json=body) as resp:
                    self.http_status = resp.status
                    self.response = await resp.json(content_type=None)
                if self.http_status == 200:
                    self.prompt_id = self.response.get("prompt_id")
                self._posted.set()
                if self.http_status != 200:
                    return
                while not self._stop.is_set():
                    try:
                        msg = await ws.receive(timeout=0.25)
                    except asyncio.TimeoutError:
                        continue
                    if msg.type in (
                        aiohttp.WSMsgType.CLOSE,
                        aiohttp.WSMsgType.CLOSED,
                        aiohttp.WSMsgType.ERROR,
                    ):
                        raise ConnectionError(f"the websocket closed: {msg}")
                    data = self._record(msg)
                    if (
                        data.get("type") == "executing"
                        and data.get("data", {}).get("node") is None
                        and data.get("data", {}).get("prompt_id") == self.prompt_id
                    ):
                        break
                if self._stop.is_set():
                    return
            async with session.get(f"{url}/history/{self.prompt_id}") as resp:
                self.history = (await resp.json()).get(self.prompt_id)

    def _record(self, msg: Any) -> dict[str, Any]:
        import aiohttp

        if msg.type == aiohttp.WSMsgType.TEXT:
            data = json.loads(msg.data)
        elif msg.type == aiohttp.WSMsgType.BINARY:
            data = {"type": "binary", "data": {"size": len(msg.data)}}
        else:
            data = {"type": f"ws:{msg.type.name}", "data": {}}
        data["t"] = round(time.monotonic() - self._started, 3)
        with self._cond:
            self.messages.append(data)
            self._cond.notify_all()
        return data

    # -- the caller's side ----------------------------------------------------------------
    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 60.0) -> dict[str, Any]:
        """Block until a message matching ``predicate`` arrives (or was already seen)."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for msg in self.messages[seen:]:
                    if predicate(msg):
                        return msg
                seen = len(self.messages)
                left = deadline - time.monotonic()
                if self._done or left <= 0:
                    seen_types = [m.get("type") for m in self.messages]
                    raise TimeoutError(f"no matching message within {timeout} s; seen {seen_types}")
                self._cond.wait(left)

    def wait(self, timeout: float = 120.0) -> RunResult:
        """Wait for the prompt to finish and return its RunResult (status "timeout" if not)."""
        self._thread.join(timeout)
        timed_out = self._thread.is_alive()
        if timed_out:
            self._stop.set()
            self._thread.join(5)
        if self.failure is not None:
            raise self.failure
        with self._cond:
            messages = list(self.messages)
        if self.http_status != 200:
            status = "rejected"
        elif timed_out:
            status = "timeout"
        else:
            types = {m.get("type") for m in messages}
            status = (
                "error"
                if "execution_error" in types
                else "interrupted"
                if "execution_interrupted" in types
                else "success"
                if "execution_success" in types
                else "unknown"
            )
        return RunResult(
            self.prompt_id, status, messages, self.history, self.response, time.monotonic() - self._started
        )


class ComfyServer:
    """One ComfyUI process with its own base directory and the given packs linked in.

    ``packs`` maps folder names inside ``custom_nodes/`` to the directories they link to.
    """

    def __init__(
        self,
        install: ComfyInstall,
        base_dir: Path,
        packs: Mapping[str, Path],
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        port: int | None = None,
    ) -> None:
        self.install = install
        self.base_dir = Path(base_dir)
        self.packs = {name: Path(path).resolve() for name, path in packs.items()}
        self.extra_args = list(extra_args)
        self.env = dict(env or {})
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = self.base_dir / "comfyui.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None
        self.startup_seconds = 0.0

    # -- life cycle -----------------------------------------------------------------------
    def command(self) -> list[str]:
        return [
            str(self.install.python),
            str(self.install.comfy_dir / "main.py"),
            "--cpu",
            "--listen",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--base-directory",
            str(self.base_dir),
            "--database-url",
            "sqlite:///:memory:",
            "--disable-api-nodes",
            "--disable-auto-launch",
            *self.extra_args,
        ]

    def start(self, timeout: float = START_TIMEOUT) -> ComfyServer:
        custom_nodes = self.base_dir / "custom_nodes"
        custom_nodes.mkdir(parents=True, exist_ok=True)  # main.py fails if it is missing
        for name, target in self.packs.items():
            link = custom_nodes / name
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target, target_is_directory=True)
        env = foreign_python_free_env()
        env.update(
            {"PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "DO_NOT_TRACK": "1"}
        )
        env.update(self.env)
        self._log_file = open(self.log_path, "ab")
        log.info("starting ComfyUI on %s, log %s", self.url, self.log_path)
        self.proc = subprocess.Popen(
            self.command(),
            cwd=str(self.base_dir),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.stop()
                raise ComfyStartError(f"ComfyUI exited with {code} during start-up:\n{self.log_tail()}")
            try:
                status, _ = self.request("GET", "/object_info/KSampler", timeout=5)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() - started > timeout:
                self.stop()
                raise ComfyStartError(f"ComfyUI did not answer within {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.25)
        self.startup_seconds = time.monotonic() - started
        log.info("ComfyUI ready in %.1f s", self.startup_seconds)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGINT)  # main.py catches KeyboardInterrupt
                    proc.wait(timeout)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    pass
            procs.end_group(proc)  # whatever is left of its group, the server itself if it hung
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def kill(self) -> None:
        """SIGKILL, as a crash or a pulled plug: nothing is saved, the queue is lost."""
        proc, self.proc = self.proc, None
        if proc is not None:
            procs.end_group(proc, first=signal.SIGKILL)  # at once, the whole group
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> ComfyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    # -- the log --------------------------------------------------------------------------
    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def import_failures(self, builtin: bool = False) -> list[str]:
        """Custom-node folders that ComfyUI's start-up summary marks ``(IMPORT FAILED)``.

        With ``builtin=True``, the ``comfy_extras`` files that failed instead (in this venv:
        ``nodes_audio.py`` and ``nodes_audio_encoder.py``, which need torchaudio).
        """
        lines = self.log_text().splitlines()
        if builtin:
            return [line.split(":", 1)[1].strip() for line in lines if line.startswith("IMPORT FAILED:")]
        return [
            line.split("(IMPORT FAILED):", 1)[1].strip()
            for line in lines
            if "seconds (IMPORT FAILED):" in line
        ]

    # -- HTTP -----------------------------------------------------------------------------
    def request(
        self, method: str, path: str, body: object = None, timeout: float = 60.0
    ) -> tuple[int, object]:
        """(status, decoded JSON or text). HTTP errors are returned, not raised."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, raw = err.code, err.read()
        text = raw.decode("utf-8", errors="replace")
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text

    def get_json(self, path: str, timeout: float = 60.0) -> Any:
        status, body = self.request("GET", path, timeout=timeout)
        if status != 200:
            raise AssertionError(f"GET {path} -> {status}: {body!r:.500}")
        return body

    def object_info(self, node_class: str | None = None) -> dict[str, Any]:
        """``/object_info`` (every node), or one class's entry (``{}`` if unknown)."""
        if node_class is None:
            return self.get_json("/object_info")
        return self.get_json(f"/object_info/{node_class}").get(node_class, {})

    def post_prompt(
        self, prompt: dict[str, Any], client_id: str | None = None, **extra: Any
    ) -> tuple[int, Any]:
        """POST /prompt. A 400 returns its body (``error``, ``node_errors``) instead of raising."""
        body = {"prompt": prompt, "client_id": client_id or uuid.uuid4().hex, **extra}
        return self.request("POST", "/prompt", body)

    def start_prompt(self, prompt: dict[str, Any], client_id: str | None = None, **extra: Any) -> PromptRun:
        """Connect the websocket, post the prompt, and return at once (see PromptRun)."""
        return PromptRun(self, prompt, client_id, extra)

    def run_prompt(
        self, prompt: dict[str, Any], timeout: float = 120.0, client_id: str | None = None, **extra: Any
    ) -> RunResult:
        """Post a prompt and block until it finishes (or ``timeout``)."""
        return self.start_prompt(prompt, client_id, **extra).wait(timeout)

    def history(self, prompt_id: str) -> dict[str, Any] | None:
        return self.get_json(f"/history/{prompt_id}").get(prompt_id)

    def queue(self) -> dict[str, Any]:
        return self.get_json("/queue")

    def interrupt(self, prompt_id: str | None = None) -> int:
        body = {"prompt_id": prompt_id} if prompt_id else {}
        return self.request("POST", "/interrupt", body)[0]

    def free(self, unload_models: bool = True, free_memory: bool = True) -> int:
        """POST /free: the worker acts on it at once when idle, else after the running prompt."""
        return self.request("POST", "/free", {"unload_models": unload_models, "free_memory": free_memory})[0]


TINY_CHECKPOINT = "tiny-sd15-random.safetensors"


def write_tiny_checkpoint(server: ComfyServer, name: str = TINY_CHECKPOINT) -> str:
    """Write the random-weight SD1.5 checkpoint (``tiny_checkpoint.py``) into the server's
    ``models/checkpoints`` with ComfyUI's own interpreter; returns its ``ckpt_name``."""
    tiny_checkpoint_file(server.install, server.base_dir / "models" / "checkpoints", name)
    return name


def tiny_checkpoint_file(install: ComfyInstall, folder: Path, name: str = TINY_CHECKPOINT) -> Path:
    """The random-weight SD1.5 checkpoint in ``folder``, written there unless it is."""
    path = folder / name
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / (name + ".part")
        _tiny_checkpoint_script(install, str(partial))
        partial.rename(path)
    return path


def checkpoint_sizes(install: ComfyInstall, path: Path) -> dict[str, float]:
    """What ComfyUI (``--cpu``) makes of a checkpoint: ``model_size()`` of its ``clip``, ``unet``
    and ``vae``, and ``minimum_inference_memory()`` as ``reserve``, in bytes."""
    return json.loads(_tiny_checkpoint_script(install, "--sizes", str(path)).strip().splitlines()[-1])


def _tiny_checkpoint_script(install: ComfyInstall, *args: str) -> str:
    command = [str(install.python), str(TINY_CHECKPOINT_WRITER), str(install.comfy_dir), *args]
    run = procs.run(command, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {run.returncode}:\n{run.stderr[-3000:]}")
    return run.stdout
