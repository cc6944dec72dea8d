"""Three patches of llama-cpp-python 0.3.36 internals, each held only for the length of a ``Llama``
constructor (loads are serialised by the model cache's lock in ``mangaka.llm.loading``), and the
check that the installed version is the one they were written for (``check_version``):

- ``LoadProgress``: llama.cpp's model-load progress callback (a progress bar, and cancelling a
  load), which the library's constructor has no parameter for;
- ``flash_attn_type``: llama.cpp's own AUTO flash-attention mode, which the library's boolean
  ``flash_attn`` cannot ask for; ``check_flash_attn`` checks the result on the loaded object.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from ..errors import BackendMissingError, Cancelled
from .base import CancelFn, ProgressFn
from .native import INSTALL_HINT

# The in-process backend's messages keep the one logger name they had before it was split.
log = logging.getLogger(__name__.rpartition(".")[0] + ".inprocess")

# The llama-cpp-python release these patches (and the decode loop's use of ``Llama._ctx`` and
# ``Llama._batch``) were written and tested for; pyproject.toml and native/install.py (which
# install.py runs) pin the same one (tests/unit/test_versions.py).
PATCHED_VERSION = "0.3.36"


def check_version(llama_cpp: Any) -> None:
    """Refuse another llama-cpp-python than ``PATCHED_VERSION``, naming both, before a load."""
    installed = str(getattr(llama_cpp, "__version__", "unknown"))
    if installed != PATCHED_VERSION:
        raise BackendMissingError(
            f"llama-cpp-python {installed} is installed, but this pack patches the internals of "
            f"llama-cpp-python {PATCHED_VERSION} (load progress, flash-attention mode, recurrent-state "
            f"snapshots) and is tested with that version only; {INSTALL_HINT}"
        )


class LoadProgress:
    """llama.cpp's model-load progress callback, set on the parameters ``Llama`` builds.

    llama-cpp-python 0.3.36 has no parameter for it, so ``llama_model_default_params`` is wrapped
    for the length of the constructor (loads are serialised by the model cache's lock). An
    exception must not cross into C: it is kept, the load is stopped, and it is raised after."""

    def __init__(self, llama_cpp: Any, on_progress: ProgressFn | None, cancel: CancelFn | None) -> None:
        self.module = llama_cpp.llama_cpp
        self.on_progress, self.cancel = on_progress, cancel
        self.stopped: BaseException | None = None
        self.callback = self.module.llama_progress_callback(self._called)  # kept alive with self

    def _called(self, fraction: float, _user_data: Any) -> bool:
        try:
            if self.cancel is not None and self.cancel():
                self.stopped = Cancelled("model load interrupted")
                return False
            if self.on_progress is not None:
                self.on_progress(min(100, int(fraction * 100)), 100)
            return True
        except BaseException as exc:  # noqa: BLE001  (re-raised after the load)
            self.stopped = exc
            return False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if self.on_progress is None and self.cancel is None:
            yield
            return
        default = self.module.llama_model_default_params

        def with_progress() -> Any:
            params = default()
            params.progress_callback = self.callback
            return params

        self.module.llama_model_default_params = with_progress
        try:
            yield
        finally:
            self.module.llama_model_default_params = default


@contextlib.contextmanager
def flash_attn_type(llama_cpp: Any, mode: str) -> Iterator[None]:
    """Let ``Llama(flash_attn=True)`` ask llama.cpp for ``mode`` ("auto", "on" or "off").

    llama-cpp-python 0.3.36 maps its boolean to ENABLED/DISABLED, never to llama.cpp's own
    default AUTO, which turns flash attention on where the device supports it (measured on CPU
    with gemma-3-270m: about 8% faster decoding than off, the gap between our decoding and
    ``llama-bench``; Qwen3.5 MoE decodes faster with it off there: ``loading.flash_attn_mode``). For
    "auto" the ENABLED constant it reads while building the context parameters is pointed at AUTO
    for the length of the constructor; loads are serialised by the model cache's lock, and the
    result is checked on the object afterwards.
    """
    if mode != "auto":
        yield
        return
    module = llama_cpp.llama_cpp
    enabled = module.LLAMA_FLASH_ATTN_TYPE_ENABLED
    module.LLAMA_FLASH_ATTN_TYPE_ENABLED = module.LLAMA_FLASH_ATTN_TYPE_AUTO
    try:
        yield
    finally:
        module.LLAMA_FLASH_ATTN_TYPE_ENABLED = enabled


def check_flash_attn(llama_cpp: Any, llama: Any, mode: str) -> None:
    """Warn when the loaded ``llama`` did not get the flash-attention type ``mode`` asked for."""
    lib = llama_cpp.llama_cpp
    wanted = {
        "auto": lib.LLAMA_FLASH_ATTN_TYPE_AUTO,
        "on": lib.LLAMA_FLASH_ATTN_TYPE_ENABLED,
        "off": lib.LLAMA_FLASH_ATTN_TYPE_DISABLED,
    }[mode]
    got = getattr(getattr(llama, "context_params", None), "flash_attn_type", wanted)
    if got != wanted:
        log.warning("flash attention %r was asked for but llama-cpp-python set type %s", mode, got)


@contextlib.contextmanager
def recurrent_snapshots(llama_cpp: Any, n: int) -> Iterator[None]:
    """Let the next ``Llama`` context keep ``n`` recurrent-state snapshots a sequence
    (``n_rs_seq``; 0 leaves llama.cpp's default, none), by wrapping
    ``llama_context_default_params`` for the length of the constructor."""
    if n <= 0:
        yield
        return
    module = llama_cpp.llama_cpp
    default = module.llama_context_default_params

    def with_snapshots() -> Any:
        params = default()
        params.n_rs_seq = n
        return params

    module.llama_context_default_params = with_snapshots
    try:
        yield
    finally:
        module.llama_context_default_params = default
