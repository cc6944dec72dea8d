"""Loading GGUF models into this process with llama-cpp-python, and keeping them loaded.

- ``LoadOptions``: how to load (context, GPU layers, threads, flash attention, batch), checked
  when built, so a bad option is refused before a model loads;
- ``check_model_file`` / ``check_lora_file``: a file's GGUF header checked without loading it;
- ``load_model(path, options)`` returns a cached ``LoadedModel`` (keyed by file and options), so a
  second run does not reload; ``release_models()`` frees them (hooked to ComfyUI's ``/free``),
  ``release_model(model)`` one of them; a handle (``LlamaCppLLM``) loads it again on next use;
- ``resident_models(where)`` / ``loaded_bytes(where)``: the loaded models on the GPU or in RAM and
  the bytes they hold (``LoadedModel.size_bytes``: weights plus the KV cache at its context);
  ``make_room(free, need, where)`` frees the least recently used of them until ``need`` is free.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, LoraError, MangakaError, ModelFileError
from .base import CancelFn, ProgressFn
from .constrain import forget_model
from .decode_thread import DecodeThread
from .gguf_info import GGUFInfo, read_gguf_info
from .interrupt import InterruptToAbort
from .memory import (
    Placement,
    compute_buffer_bytes,
    kv_cache_bytes,
    placement,
    plan_release,
    recurrent_state_bytes,
)
from .native import check_architecture, gpu_offload, import_llama_cpp
from .options import LOAD_OPTIONS, FlashAttn
from .patches import LoadProgress, check_flash_attn, check_version, flash_attn_type, recurrent_snapshots
from .prefix import PrefixCache

# The in-process backend's messages keep the one logger name they had before it was split.
log = logging.getLogger(__name__.rpartition(".")[0] + ".inprocess")

# A ChatML template, used only for models whose GGUF carries none (a warning says so).
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# The ranges of the two LoadOptions fields that are not user options (those are in options.py).
N_BATCH_RANGE = (1, 65536)
ROLLBACK_RANGE = (0, 64)
# Hybrid architectures whose recurrent memory llama.cpp can roll back by a few tokens (from
# per-token snapshots), of those the pack loads; attention-only ones drop positions freely.
ROLLBACK_ARCHITECTURES = frozenset({"qwen35moe"})
# Architectures whose attention llama.cpp's CPU flash-attention kernel runs slower than its plain
# path: ``auto`` loads them with flash attention off when no layer is offloaded
# (``flash_attn_mode``). Measured on Qwen3.5-35B-A3B's shape, one process, alternating
# (docs/performance.md): off decodes 1.03x as fast at 1k tokens of context, 1.12x at 4k, 1.25x at
# 8k, and prefills as fast; on SmolLM2 off also decodes faster but prefills slower, on gemma-3 it
# is slower throughout, so the rule is per architecture.
CPU_FLASH_ATTN_OFF = frozenset({"qwen35moe"})


def _check_whole(label: str, value: Any, bounds: tuple[int, int], meaning: str = "") -> None:
    """``label``: the widget's name, then the field's in brackets where they differ
    (``context (n_ctx)``); the error is about the field."""
    low, high = bounds
    field = label.split("(")[-1].rstrip(")") if "(" in label else label
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError.about(field, f"must be a whole number from {low} to {high}, got {value!r}", label)
    if not low <= value <= high:
        raise InputError.about(field, f"must be from {low} to {high}{meaning}, got {value}", label)


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model. ``n_ctx`` is capped at the model's trained context length.

    Every field is checked at construction (``InputError`` naming it and its range), so a bad
    option is refused before a model is loaded.
    """

    n_ctx: int = LOAD_OPTIONS["n_ctx"].default
    n_gpu_layers: int = LOAD_OPTIONS["n_gpu_layers"].default  # -1: all layers (a CPU build: none)
    n_threads: int = LOAD_OPTIONS["n_threads"].default  # 0: every core (llama-cpp-python's: half)
    flash_attn: FlashAttn = LOAD_OPTIONS["flash_attn"].default  # auto: see flash_attn_mode
    n_batch: int = 512
    # recurrent-state snapshots a sequence keeps (llama.cpp's n_rs_seq) on hybrid models that
    # support rolling back (qwen35moe): exact jump-forward then drops a cut draft's rows through
    # them, at most this many. Each costs one copy of the recurrent state (Qwen3.5-35B-A3B: about
    # 63 MB) and together they slow every decoded token (7-10 % on that model on a CPU); with 0
    # (the default) a cut draft is rolled back through one saved copy of the state instead
    # (``mangaka.llm.decode.StateCheckpoint``).
    rollback_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("n_ctx", "n_gpu_layers", "n_threads", "flash_attn"):  # as declared (options.py)
            LOAD_OPTIONS[name].check(getattr(self, name))
        _check_whole("batch (n_batch)", self.n_batch, N_BATCH_RANGE, " tokens")
        _check_whole("rollback_tokens", self.rollback_tokens, ROLLBACK_RANGE, " (0 = none)")

    def resolved_threads(self) -> int:
        return self.n_threads if self.n_threads > 0 else (os.cpu_count() or 1)


@dataclass
class LoadedModel:
    """A loaded llama.cpp model and context; one generation at a time (``lock``)."""

    path: Path
    info: GGUFInfo
    options: LoadOptions
    llama: Any
    n_ctx: int
    load_seconds: float
    placement: Placement = "ram"  # where its memory lives: "gpu" when layers are offloaded
    size_bytes: int = 0  # what it holds: weights file, f16 KV cache at its context, recurrent states, logits
    lock: threading.RLock = field(default_factory=threading.RLock)
    adapters: dict[Path, Any] = field(default_factory=dict)  # adapter file → llama_adapter_lora*
    active_lora: tuple[Path, float] | None = None
    _abort_flag: list[bool] = field(default_factory=lambda: [False])
    prefix_cache: PrefixCache = field(default_factory=PrefixCache)
    _abort_cb: Any = None
    _formatters: dict[bool, Any] = field(default_factory=dict)
    decode_thread: DecodeThread = field(default_factory=DecodeThread)  # every decode runs on it

    @property
    def architecture(self) -> str:
        return self.info.architecture

    @property
    def abort_flag(self) -> list[bool]:
        """The one-element flag llama.cpp's abort callback reads: ``[True]`` stops ``llama_decode``."""
        return self._abort_flag

    @property
    def context(self) -> Any:
        """The native ``llama_context*`` (for LoRA adapters and the abort callback)."""
        return self.llama._ctx.ctx

    def install_abort_callback(self, llama_cpp: Any) -> None:
        """Have llama.cpp poll ``abort_flag`` during a decode (the callback is kept alive here)."""
        self._abort_cb = llama_cpp.ggml_abort_callback(lambda _data: self._abort_flag[0])
        llama_cpp.llama_set_abort_callback(self.context, self._abort_cb, None)

    def chat_formatter(self, generation_prompt: bool = True) -> Any:
        """The model's chat template as a llama-cpp-python formatter, built once per model and
        ``generation_prompt`` (ChatML, with a warning, for a model whose GGUF carries none)."""
        formatters = self._formatters
        if generation_prompt not in formatters:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = self.llama
            template = self.info.chat_template
            if not template:
                log.warning("%s has no chat template; using ChatML", self.path.name)
                template = CHATML_TEMPLATE
            vocab = llama._model
            eos = llama.detokenize([vocab.token_eos()], special=True).decode(errors="replace")
            bos_id = vocab.token_bos()
            bos = llama.detokenize([bos_id], special=True).decode(errors="replace") if bos_id >= 0 else ""
            formatters[generation_prompt] = Jinja2ChatFormatter(
                template=template, eos_token=eos, bos_token=bos, add_generation_prompt=generation_prompt
            )
        return formatters[generation_prompt]

    def report(self) -> str:
        return (
            f"{self.path.name}: {self.architecture}, context {self.n_ctx}"
            f" (trained {self.info.context_length}), {self.options.resolved_threads()} threads,"
            f" GPU layers {self.options.n_gpu_layers}, {self.size_bytes / 2**20:.0f} MB in"
            f" {'GPU memory' if self.placement == 'gpu' else 'RAM'}, loaded in {self.load_seconds:.2f} s"
        )

    def close(self) -> None:
        with self.lock:
            if self.llama is not None:
                forget_model(self.llama)  # constrained-decoding tables built for this model
                self.llama.close()
                self.llama = None
                self.adapters.clear()  # adapters are freed with their model
                self.prefix_cache.clear()
            self.decode_thread.close()


_CACHE: OrderedDict[tuple, LoadedModel] = OrderedDict()  # least recently used first
_CACHE_LOCK = threading.RLock()  # re-entered when a load asks the host for room (on_load)


def max_loaded_models() -> int:
    """How many models stay loaded at once (``MANGAKA_MAX_LOADED_MODELS``, default 1): loading
    another frees the least recently used, so switching models never holds two 20 GB files."""
    raw = os.environ.get("MANGAKA_MAX_LOADED_MODELS", "1")
    try:
        return max(1, int(raw))
    except ValueError:
        raise MangakaError(f"MANGAKA_MAX_LOADED_MODELS must be a whole number, got {raw!r}") from None


def _cache_key(path: Path, options: LoadOptions) -> tuple:
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, options)


@functools.lru_cache(maxsize=64)
def _header(path: str, _size: int, _mtime_ns: int) -> GGUFInfo:
    return read_gguf_info(path)


def _check_gguf_path(path: Path, what: str, error: type[MangakaError]) -> None:
    """A clear message for a path that is missing or a folder (read before its header)."""
    if path.is_dir():
        raise error(f"{what} {path} is a folder, not a GGUF file; give the .gguf file inside it")
    if not path.is_file():
        raise error(f"{what} file {path} not found")


def gguf_header(path: str | Path) -> GGUFInfo:
    """The file's GGUF metadata, read once per file version (path, size, modification time)."""
    path = Path(path)
    _check_gguf_path(path, "model", ModelFileError)
    st = path.stat()
    return _header(str(path.resolve()), st.st_size, st.st_mtime_ns)


def effective_n_ctx(info: GGUFInfo, n_ctx: int) -> int:
    """The context a model is loaded with: ``n_ctx``, capped at the model's trained length."""
    trained = info.context_length
    return min(n_ctx, trained) if trained and trained > 0 else n_ctx


def check_model_file(path: str | Path) -> GGUFInfo:
    """Check, without loading, that ``path`` is a GGUF model the installed llama.cpp can load."""
    path = Path(path)
    _check_gguf_path(path, "model", ModelFileError)
    info = gguf_header(path)
    if info.file_type == "adapter":
        raise ModelFileError(f"{path} is a LoRA adapter, not a model; give it as the LoRA input instead")
    check_architecture(info.architecture, f"model {path.name}")
    return info


def check_lora_file(lora: str | Path, architecture: str, model_name: str) -> GGUFInfo:
    """Check that ``lora`` is a GGUF LoRA adapter for models of ``architecture``."""
    lora = Path(lora)
    _check_gguf_path(lora, "LoRA", LoraError)
    info = gguf_header(lora)
    if info.file_type != "adapter" or info.metadata.get("adapter.type") != "lora":
        raise LoraError(
            f"{lora} is not a LoRA adapter GGUF (general.type={info.file_type!r}); "
            "convert the adapter with llama.cpp's convert_lora_to_gguf.py"
        )
    if info.architecture != architecture:
        raise LoraError(
            f"LoRA {lora.name} was made for {info.architecture!r} models, but {model_name} is "
            f"{architecture!r}; use an adapter trained for this base model"
        )
    return info


@dataclass(frozen=True)
class RoomRequest:
    """What a model about to load will hold, for the host to make room first (``on_load``): the
    weights (the file), the KV cache at the context it loads with, the recurrent state with its
    rollback snapshots and the compute buffer (logits, attention); ``where``: on the GPU or in RAM."""

    model: str
    where: Placement
    weights: int
    kv_cache: int
    recurrent: int
    compute: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.recurrent + self.compute


# The host's hook (ComfyUI's memory manager, nodes/memory.py), called before every load; an error
# in it is logged and the load goes on (llama.cpp then reports what does not fit).
_ON_LOAD: list[Callable[[RoomRequest], None]] = []


def on_load(hook: Callable[[RoomRequest], None] | None) -> None:
    """Call ``hook(request)`` before each model load (None: no hook)."""
    _ON_LOAD[:] = [] if hook is None else [hook]


def _rollback(info: GGUFInfo, options: LoadOptions) -> int:
    """The recurrent-state snapshots kept for rolling back (hybrid architectures only)."""
    return options.rollback_tokens if info.architecture in ROLLBACK_ARCHITECTURES else 0


def recurrent_copies(info: GGUFInfo, options: LoadOptions) -> int:
    """How many copies of the recurrent state a load holds: the state, and its snapshots or, with
    none, the one copy exact jump-forward saves before each verify batch."""
    return 1 + max(1, _rollback(info, options))


def flash_attn_mode(info: GGUFInfo, options: LoadOptions) -> FlashAttn:
    """The flash-attention mode a load asks llama.cpp for: ``options.flash_attn``, except that
    ``auto`` is off for an architecture in ``CPU_FLASH_ATTN_OFF`` with no layer on a GPU (a
    CPU-only build, or ``n_gpu_layers`` 0). With any layer offloaded llama.cpp's own ``auto``."""
    if (
        options.flash_attn == "auto"
        and info.architecture in CPU_FLASH_ATTN_OFF
        and placement(options.n_gpu_layers, gpu_offload()) == "ram"
    ):
        return "off"
    return options.flash_attn


def room_request(path: Path, info: GGUFInfo, options: LoadOptions, n_ctx: int | None = None) -> RoomRequest:
    """The memory a load of ``path`` with ``options`` will take (``RoomRequest``); ``n_ctx``: the
    context llama.cpp made, once loaded (before: the one it will make)."""
    n_ctx = effective_n_ctx(info, options.n_ctx) if n_ctx is None else n_ctx
    return RoomRequest(
        model=path.name,
        where=placement(options.n_gpu_layers, gpu_offload()),
        weights=path.stat().st_size,
        kv_cache=kv_cache_bytes(info, n_ctx),
        recurrent=recurrent_state_bytes(info) * recurrent_copies(info, options),
        compute=compute_buffer_bytes(
            info, min(options.n_batch, n_ctx), n_ctx, flash_attn_mode(info, options) != "off"
        ),
    )


def _ask_for_room(path: Path, info: GGUFInfo, options: LoadOptions) -> None:
    for hook in list(_ON_LOAD):
        try:
            hook(room_request(path, info, options))
        except Exception:
            log.exception("the host could not make room before loading %s; loading anyway", path.name)


def load_model(
    path: str | Path,
    options: LoadOptions | None = None,
    on_progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> LoadedModel:
    """Load (or return the cached) model. Checks the file and its architecture before loading.

    ``on_progress(done, 100)`` follows llama.cpp's loading of the tensors (copying them to a GPU
    is the slow part of a big model's load); ``cancel()`` returning True stops the load, which
    raises ``Cancelled`` and caches nothing."""
    options = options or LoadOptions()
    path = Path(path)
    _check_gguf_path(path, "model", ModelFileError)
    key = _cache_key(path, options)
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
        if cached is not None and cached.llama is not None:
            _CACHE.move_to_end(key)
            return cached
        info = check_model_file(path)
        while len(_CACHE) >= max_loaded_models():
            _old_key, old = _CACHE.popitem(last=False)
            log.info(
                "freeing %s to make room (MANGAKA_MAX_LOADED_MODELS=%d)", old.path.name, max_loaded_models()
            )
            old.close()
        _ask_for_room(path, info, options)
        loaded = _load(path, info, options, on_progress, cancel)
        _CACHE[key] = loaded
        return loaded


def _load(
    path: Path,
    info: GGUFInfo,
    options: LoadOptions,
    on_progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> LoadedModel:
    llama_cpp = import_llama_cpp()
    check_version(llama_cpp)
    # Ctrl-C or SIGTERM during the load stops it through the progress callback and is raised
    # after it (raised inside llama.cpp's log callback, ctypes would drop it: interrupt.py)
    interrupt = InterruptToAbort([False])
    progress = LoadProgress(
        llama_cpp, on_progress, lambda: interrupt.hit or (cancel is not None and cancel())
    )
    n_ctx = effective_n_ctx(info, options.n_ctx)
    if n_ctx < options.n_ctx:
        log.info("context %d is above %s's trained length %d; using it", options.n_ctx, path.name, n_ctx)
    started = time.monotonic()
    flash_attn = flash_attn_mode(info, options)
    if flash_attn != options.flash_attn:
        log.info(
            "flash attention %s for %s on the CPU: its plain attention path decodes faster",
            flash_attn,
            info.architecture,
        )
    try:
        rollback = _rollback(info, options)
        with (
            interrupt,
            flash_attn_type(llama_cpp, flash_attn),
            progress.installed(),
            recurrent_snapshots(llama_cpp, rollback),
        ):
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=min(options.n_batch, n_ctx),
                n_gpu_layers=options.n_gpu_layers,
                n_threads=options.resolved_threads(),
                n_threads_batch=options.resolved_threads(),
                flash_attn=flash_attn != "off",
                use_mmap=True,
                verbose=False,
            )
    except (ValueError, RuntimeError) as exc:
        interrupt.raise_if_hit()
        if progress.stopped is not None:
            raise progress.stopped from None
        raise ModelFileError(
            f"llama.cpp could not load {path} ({info.architecture}, {path.stat().st_size / 2**20:.0f} MiB): "
            f"{exc}. The file may be truncated or need more memory than is free; lower the context "
            "or GPU layers, or check the download."
        ) from None
    interrupt.raise_if_hit()  # after the last progress call: the loaded model is dropped
    check_flash_attn(llama_cpp, llama, flash_attn)
    held = room_request(path, info, options, llama.n_ctx())  # at the context llama.cpp made
    loaded = LoadedModel(
        path=path,
        info=info,
        options=options,
        llama=llama,
        n_ctx=llama.n_ctx(),
        load_seconds=time.monotonic() - started,
        placement=held.where,
        # the weights, the KV cache, and the recurrent state with its snapshots or checkpoint
        size_bytes=held.total,
    )
    loaded.install_abort_callback(llama_cpp)
    log.info("loaded %s", loaded.report())
    return loaded


def release_models() -> int:
    """Free every cached model (ComfyUI's ``/free``); returns how many were freed."""
    with _CACHE_LOCK:
        models = list(_CACHE.values())
        _CACHE.clear()
    for model in models:
        model.close()
    return len(models)


def cached_models() -> list[LoadedModel]:
    with _CACHE_LOCK:
        return list(_CACHE.values())


def release_model(model: LoadedModel) -> bool:
    """Free one cached model (a handle loads it again on next use); False when it was not loaded."""
    with _CACHE_LOCK:
        for key, cached in list(_CACHE.items()):
            if cached is model:
                del _CACHE[key]
    was_loaded = model.llama is not None
    model.close()
    return was_loaded


def resident_models(where: Placement | None = None) -> list[LoadedModel]:
    """The loaded models, least recently used first; only those on the GPU or in RAM if asked."""
    return [m for m in cached_models() if m.llama is not None and where in (None, m.placement)]


def loaded_bytes(where: Placement | None = None) -> int:
    """The bytes the loaded models hold (on the GPU or in RAM if asked)."""
    return sum(m.size_bytes for m in resident_models(where))


def make_room(free: float, need: float, where: Placement) -> list[tuple[LoadedModel, int]]:
    """Free the least recently used models in ``where`` until ``need`` bytes would be free (all of
    them when that is not enough; none when ``free`` already is); returns each freed model and
    the bytes it held."""
    models = resident_models(where)
    sizes = [m.size_bytes for m in models]
    freed = []
    count = plan_release(free, need, sizes)
    for model, size in zip(models[:count], sizes[:count], strict=True):
        if release_model(model):
            freed.append((model, size))
    return freed
