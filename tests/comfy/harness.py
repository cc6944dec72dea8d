"""The comfy tier's ComfyUI server and client: ``mangaka/devtools/comfy_server.py``, which the
benchmark's ``manga_page`` part starts too. Re-exported here, where the tests import them from."""

from __future__ import annotations

from mangaka.devtools.comfy_server import (
    CHECKOUT,
    COMFY_ENV,
    FINAL_TYPES,
    PACK_FOLDER,
    START_TIMEOUT,
    TINY_CHECKPOINT,
    ComfyInstall,
    ComfyServer,
    ComfyStartError,
    ComfyUnavailable,
    PromptRun,
    RunResult,
    checkpoint_sizes,
    find_install,
    foreign_python_free_env,
    free_port,
    tiny_checkpoint_file,
    write_tiny_checkpoint,
)

__all__ = [
    "CHECKOUT",
    "COMFY_ENV",
    "FINAL_TYPES",
    "PACK_FOLDER",
    "START_TIMEOUT",
    "TINY_CHECKPOINT",
    "ComfyInstall",
    "ComfyServer",
    "ComfyStartError",
    "ComfyUnavailable",
    "PromptRun",
    "RunResult",
    "checkpoint_sizes",
    "find_install",
    "foreign_python_free_env",
    "free_port",
    "tiny_checkpoint_file",
    "write_tiny_checkpoint",
]
