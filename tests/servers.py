"""Real OpenAI-compatible servers for the tests, started on 127.0.0.1 in their own process groups:
llama-cpp-python's ``python -m llama_cpp.server`` and llama.cpp's ``llama-server`` (built and cached
by ``native/llama_server.py``). Used by the model tier's remote tests and the Remote LLM node's."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def llama_server_binary() -> str | None:
    """The built llama-server, or None; waits for tests/run.sh's background build first."""
    from tests.background import wait_for

    wait_for("MANGAKA_LLAMA_SERVER_PREPARE", "the llama-server build")
    found = subprocess.run(
        [sys.executable, str(ROOT / "native" / "llama_server.py"), "--print-path"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 and found.stdout.strip() else None


def wheel_library_env() -> dict[str, str]:
    """llama-server is linked to the wheel's libraries: find this venv's (the cached binary is
    shared between checkouts, keyed by the libraries' content)."""
    import llama_cpp

    libdir = Path(llama_cpp.__file__).resolve().parent / "lib"
    return {
        **os.environ,
        "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(libdir), os.environ.get("LD_LIBRARY_PATH")])),
    }


class Server:
    """A real OpenAI-compatible server in a subprocess (start, kill, start again on the same port):
    ``kind`` is "llama_cpp.server" (llama-cpp-python) or "llama-server" (llama.cpp)."""

    def __init__(
        self, model: Path, kind: str = "llama_cpp.server", api_key: str | None = None, parallel: int = 1
    ):
        self.model, self.kind, self.api_key, self.parallel = model, kind, api_key, parallel
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        if self.kind == "llama-server":
            binary = llama_server_binary()
            if binary is None:
                raise RuntimeError("llama-server is not built: python native/llama_server.py")
            cmd = [binary, "-m", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
                   "-c", str(8192 * self.parallel), "-t", "1", "--parallel", str(self.parallel),
                   "--no-webui", "--jinja"]  # fmt: skip
            return cmd + (["--api-key", self.api_key] if self.api_key else [])
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", "8192", "--n_threads", "1"]  # fmt: skip
        return cmd + (["--api_key", self.api_key] if self.api_key else [])

    def start(self, timeout: float = 120.0) -> Server:
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=wheel_library_env(),
            start_new_session=True,  # its own process group, like every child the pack starts
        )
        probe = "/health" if self.kind == "llama-server" else "/docs"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}{probe}", timeout=2).read()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.kind} exited during start-up") from None
                time.sleep(0.2)
        raise RuntimeError(f"{self.kind} did not come up")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
