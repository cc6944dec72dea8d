"""The in-process backend: a GGUF model run by llama-cpp-python inside this Python process.

- ``load_model(path, options)`` returns a cached ``LoadedModel`` (keyed by file and options), so a
  second run does not reload; ``release_models()`` frees them (hooked to ComfyUI's ``/free``).
- ``LlamaCppLLM(model, lora=…, lora_scale=…)`` is a light handle implementing the ``LLM``
  protocol; the LoRA is attached to the loaded model after load (mmap kept), its scale applied,
  or detached, just before each call, so handles with different adapters share one model.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import (
    Cancelled,
    ContextOverflowError,
    GenerationError,
    InputError,
    LoraError,
    MangakaError,
    ModelFileError,
)
from .base import CancelFn, Completion, Message, ProgressFn, Sampling, Usage
from .chat import THINK_OPEN, normalize_messages, split_reasoning
from .constrain import DEFAULT_ENGINE, ENGINES, forget_model, make_constraint
from .decode import decode
from .gguf_info import GGUFInfo, read_gguf_info
from .grammar import schema_to_gbnf
from .native import check_architecture, import_llama_cpp
from .prefix import PrefixCache
from .prefix import prepare as prepare_prefix

log = logging.getLogger(__name__)

DEFAULT_N_CTX = 32768
# A ChatML template, used only for models whose GGUF carries none (a warning says so).
CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


FlashAttn = Literal["auto", "on", "off"]
FLASH_ATTN_MODES: tuple[str, ...] = ("auto", "on", "off")
# The ranges LoadOptions accepts (the Load LLM node's widgets use the same).
N_CTX_RANGE = (512, 262144)  # Qwen3.5's trained context is 262144
N_GPU_LAYERS_RANGE = (-1, 1000)  # -1: every layer
N_THREADS_RANGE = (0, 256)  # 0: every core
N_BATCH_RANGE = (1, 65536)
LORA_SCALE_RANGE = (-4.0, 4.0)


def _check_whole(label: str, value: Any, bounds: tuple[int, int], meaning: str = "") -> None:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{label} must be a whole number from {low} to {high}, got {value!r}")
    if not low <= value <= high:
        raise InputError(f"{label} must be from {low} to {high}{meaning}, got {value}")


def check_lora_scale(scale: Any, label: str = "lora_scale") -> float:
    """``scale`` as a float in ``LORA_SCALE_RANGE``, or ``InputError`` naming ``label``."""
    low, high = LORA_SCALE_RANGE
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise InputError(f"{label} must be a number from {low:g} to {high:g}, got {scale!r}")
    if not low <= scale <= high:
        raise InputError(
            f"{label} must be from {low:g} to {high:g} (1 = the adapter as trained), got {scale:g}"
        )
    return float(scale)


@dataclass(frozen=True)
class LoadOptions:
    """How to load a model. ``n_ctx`` is capped at the model's trained context length.

    Every field is checked at construction (``InputError`` naming it and its range), so a bad
    option is refused before a model is loaded.
    """

    n_ctx: int = DEFAULT_N_CTX
    n_gpu_layers: int = 0  # -1: all layers
    n_threads: int = 0  # 0: every core (llama-cpp-python's own default is half of them)
    flash_attn: FlashAttn = "auto"  # llama.cpp decides per device; "on"/"off" force it
    n_batch: int = 512

    def __post_init__(self) -> None:
        _check_whole("context (n_ctx)", self.n_ctx, N_CTX_RANGE, " tokens")
        _check_whole("gpu_layers (n_gpu_layers)", self.n_gpu_layers, N_GPU_LAYERS_RANGE, " (-1 = all)")
        _check_whole("threads (n_threads)", self.n_threads, N_THREADS_RANGE, " (0 = every core)")
        _check_whole("batch (n_batch)", self.n_batch, N_BATCH_RANGE, " tokens")
        if not isinstance(self.flash_attn, str) or self.flash_attn not in FLASH_ATTN_MODES:
            raise InputError(
                f"flash_attn must be one of {', '.join(FLASH_ATTN_MODES)}, not {self.flash_attn!r}"
            )

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
    lock: threading.RLock = field(default_factory=threading.RLock)
    adapters: dict[Path, Any] = field(default_factory=dict)  # adapter file → llama_adapter_lora*
    active_lora: tuple[Path, float] | None = None
    _abort_flag: list[bool] = field(default_factory=lambda: [False])
    prefix_cache: PrefixCache = field(default_factory=PrefixCache)
    _abort_cb: Any = None
    _formatters: dict[bool, Any] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        return self.info.architecture

    def report(self) -> str:
        return (
            f"{self.path.name}: {self.architecture}, context {self.n_ctx}"
            f" (trained {self.info.context_length}), {self.options.resolved_threads()} threads,"
            f" GPU layers {self.options.n_gpu_layers}, loaded in {self.load_seconds:.2f} s"
        )

    def close(self) -> None:
        with self.lock:
            if self.llama is not None:
                forget_model(self.llama)  # constrained-decoding tables built for this model
                self.llama.close()
                self.llama = None
                self.adapters.clear()  # adapters are freed with their model
                self.prefix_cache.clear()


_CACHE: OrderedDict[tuple, LoadedModel] = OrderedDict()  # least recently used first
_CACHE_LOCK = threading.Lock()


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
        loaded = _load(path, info, options, on_progress, cancel)
        _CACHE[key] = loaded
        return loaded


class _LoadProgress:
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


def _load(
    path: Path,
    info: GGUFInfo,
    options: LoadOptions,
    on_progress: ProgressFn | None = None,
    cancel: CancelFn | None = None,
) -> LoadedModel:
    llama_cpp = import_llama_cpp()
    progress = _LoadProgress(llama_cpp, on_progress, cancel)
    trained = info.context_length
    n_ctx = options.n_ctx
    if trained and n_ctx > trained:
        log.info("context %d is above %s's trained length %d; using %d", n_ctx, path.name, trained, trained)
        n_ctx = trained
    started = time.monotonic()
    try:
        with flash_attn_type(llama_cpp, options.flash_attn), progress.installed():
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_batch=min(options.n_batch, n_ctx),
                n_gpu_layers=options.n_gpu_layers,
                n_threads=options.resolved_threads(),
                n_threads_batch=options.resolved_threads(),
                flash_attn=options.flash_attn != "off",
                use_mmap=True,
                verbose=False,
            )
    except (ValueError, RuntimeError) as exc:
        if progress.stopped is not None:
            raise progress.stopped from None
        raise ModelFileError(
            f"llama.cpp could not load {path} ({info.architecture}, {path.stat().st_size / 2**20:.0f} MiB): "
            f"{exc}. The file may be truncated or need more memory than is free; lower the context "
            "or GPU layers, or check the download."
        ) from None
    _check_flash_attn(llama_cpp, llama, options.flash_attn)
    loaded = LoadedModel(
        path=path,
        info=info,
        options=options,
        llama=llama,
        n_ctx=llama.n_ctx(),
        load_seconds=time.monotonic() - started,
    )
    loaded._abort_cb = llama_cpp.ggml_abort_callback(lambda _data: loaded._abort_flag[0])
    llama_cpp.llama_set_abort_callback(llama._ctx.ctx, loaded._abort_cb, None)
    log.info("loaded %s", loaded.report())
    return loaded


@contextlib.contextmanager
def flash_attn_type(llama_cpp: Any, mode: str) -> Iterator[None]:
    """Let ``Llama(flash_attn=True)`` ask llama.cpp for ``mode`` ("auto", "on" or "off").

    llama-cpp-python 0.3.36 maps its boolean to ENABLED/DISABLED, never to llama.cpp's own
    default AUTO, which turns flash attention on where the device supports it (measured on CPU:
    about 8% faster decoding than off, the gap between our decoding and ``llama-bench``). For
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


def _check_flash_attn(llama_cpp: Any, llama: Any, mode: str) -> None:
    lib = llama_cpp.llama_cpp
    wanted = {
        "auto": lib.LLAMA_FLASH_ATTN_TYPE_AUTO,
        "on": lib.LLAMA_FLASH_ATTN_TYPE_ENABLED,
        "off": lib.LLAMA_FLASH_ATTN_TYPE_DISABLED,
    }[mode]
    got = getattr(getattr(llama, "context_params", None), "flash_attn_type", wanted)
    if got != wanted:
        log.warning("flash attention %r was asked for but llama-cpp-python set type %s", mode, got)


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


# ---------------------------------------------------------------------------------------- LoRA


def _check_adapter(model: LoadedModel, lora: Path) -> None:
    check_lora_file(lora, model.architecture, model.path.name)


def apply_lora(model: LoadedModel, lora: Path | None, scale: float = 1.0) -> None:
    """Attach, rescale or detach the model's LoRA; resets the KV cache when it changes."""
    llama_cpp = import_llama_cpp()
    wanted = (lora.resolve(), float(scale)) if lora is not None and scale != 0.0 else None
    if wanted == model.active_lora:
        return
    ctx = model.llama._ctx.ctx
    if wanted is None:
        rc = llama_cpp.llama_set_adapters_lora(ctx, None, 0, None)
    else:
        path, value = wanted
        adapter = model.adapters.get(path)
        if adapter is None:
            _check_adapter(model, path)
            adapter = llama_cpp.llama_adapter_lora_init(model.llama.model, str(path).encode())
            if not adapter:
                raise LoraError(
                    f"llama.cpp could not load LoRA {path}: its tensors do not match "
                    f"{model.path.name} (wrong base model or rank?)"
                )
            model.adapters[path] = adapter
        arr = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(value)
        rc = llama_cpp.llama_set_adapters_lora(ctx, arr, 1, scales)
    if rc != 0:
        raise LoraError(f"llama.cpp refused to set the LoRA adapters (code {rc})")
    model.active_lora = wanted
    model.llama.reset()  # cached KV and snapshots were computed with the old weights
    model.prefix_cache.clear()
    log.info("LoRA %s", f"{wanted[0].name} at {wanted[1]}" if wanted else "detached")


# ---------------------------------------------------------------------------------- generation


class LlamaCppLLM:
    """An ``LLM`` over a cached loaded model, optionally with a LoRA at a strength.

    Cheap to create and to keep in ComfyUI's output cache: it holds the file and options, and
    loads the model again if ``release_models()`` freed it in between.
    """

    def __init__(
        self,
        path: str | Path,
        options: LoadOptions | None = None,
        lora: str | Path | None = None,
        lora_scale: float = 1.0,
        engine: str = DEFAULT_ENGINE,
        on_progress: ProgressFn | None = None,
        cancel: CancelFn | None = None,
    ) -> None:
        self.path = Path(path)
        lora_scale = check_lora_scale(lora_scale)
        self.engine = engine  # constrained decoding: mangaka.llm.constrain.ENGINES
        self.options = options or LoadOptions()
        self._model = load_model(self.path, self.options, on_progress, cancel)
        self.lora = Path(lora) if lora else None
        self.lora_scale = float(lora_scale)
        if self.lora is not None:
            _check_adapter(self._model, self.lora)
        self.name = self.path.name + (f" + {self.lora.name}@{self.lora_scale:g}" if self.lora else "")

    @property
    def model(self) -> LoadedModel:
        """The loaded model; loaded again (from the cache or the file) after a release."""
        if self._model.llama is None:
            self._model = load_model(self.path, self.options)
        return self._model

    @property
    def n_ctx(self) -> int:
        return self.model.n_ctx

    def _formatter(self, generation_prompt: bool = True) -> Any:
        formatters = self.model._formatters
        if generation_prompt not in formatters:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = self.model.llama
            template = self.model.info.chat_template
            if not template:
                log.warning("%s has no chat template; using ChatML", self.model.path.name)
                template = CHATML_TEMPLATE
            vocab = llama._model
            eos = llama.detokenize([vocab.token_eos()], special=True).decode(errors="replace")
            bos_id = vocab.token_bos()
            bos = llama.detokenize([bos_id], special=True).decode(errors="replace") if bos_id >= 0 else ""
            formatters[generation_prompt] = Jinja2ChatFormatter(
                template=template, eos_token=eos, bos_token=bos, add_generation_prompt=generation_prompt
            )
        return formatters[generation_prompt]

    def render(self, messages: list[Message], *, thinking: bool = False) -> str:
        return self._render(normalize_messages(messages), thinking, generation_prompt=True)

    def _render(self, messages: list[Message], thinking: bool, *, generation_prompt: bool) -> str:
        try:
            result = self._formatter(generation_prompt)(messages=messages, enable_thinking=thinking)
        except Exception as exc:  # noqa: BLE001 - Jinja raises anything a template does
            raise GenerationError(f"{self.model.path.name}'s chat template failed: {exc}") from None
        return result.prompt

    def _tokenize(self, text: str) -> list[int]:
        return self.model.llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def message_boundaries(self, messages: list[Message], tokens: list[int], *, thinking: bool) -> list[int]:
        """Token counts at which a prefix of the conversation ends (after the system prompt, after
        each later message): the points where a prompt snapshot can serve a later call."""
        normalized = normalize_messages(messages)
        full = self._render(normalized, thinking, generation_prompt=True)
        out: list[int] = []
        for k in range(1, len(normalized)):
            head = self._render(normalized[:k], thinking, generation_prompt=False)
            if not full.startswith(head):
                continue
            head_tokens = self._tokenize(head)
            if 0 < len(head_tokens) < len(tokens) and tokens[: len(head_tokens)] == head_tokens:
                out.append(len(head_tokens))
        return out

    def tokenize_prompt(self, messages: list[Message], *, thinking: bool = False) -> list[int]:
        return self._tokenize(self.render(messages, thinking=thinking))

    def count_tokens(self, messages: list[Message], *, thinking: bool = False) -> int:
        return len(self.tokenize_prompt(messages, thinking=thinking))

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        thinking: bool = False,
        on_progress: ProgressFn | None = None,
        cancel: CancelFn | None = None,
        engine: str | None = None,
    ) -> Completion:
        sampling = sampling or Sampling()
        if schema is not None and thinking:
            log.info("thinking turned off: output is constrained to a schema")
            thinking = False
        grammar = schema_to_gbnf(schema) if schema is not None else None
        engine = engine or self.engine
        if engine not in ENGINES:
            raise MangakaError(f"unknown constrained-decoding engine {engine!r}; valid: {', '.join(ENGINES)}")
        model = self.model
        with model.lock:
            if model.llama is None:
                raise GenerationError(f"{model.path.name} was released; load it again")
            apply_lora(model, self.lora, self.lora_scale)
            tokens = self.tokenize_prompt(messages, thinking=thinking)
            n_prompt, n_ctx = len(tokens), model.n_ctx
            if n_prompt >= n_ctx:
                raise ContextOverflowError(
                    f"the prompt is {n_prompt} tokens but the context window is {n_ctx} tokens; "
                    "shorten the chapter (split it), or load the model with a larger context",
                    n_prompt,
                    n_ctx,
                )
            budget = min(max_tokens, n_ctx - n_prompt)
            if budget < max_tokens:
                log.info("token budget %d cut to %d: the context has room for no more", max_tokens, budget)
            boundaries = self.message_boundaries(messages, tokens, thinking=thinking)
            text, finish, n_out, reused = self._run(
                tokens, boundaries, grammar, engine, sampling, budget, on_progress, cancel
            )
        usage = Usage(
            prompt_tokens=n_prompt, completion_tokens=n_out, prompt_tokens_decoded=n_prompt - reused
        )
        if thinking:
            reasoning, answer, closed = split_reasoning(text, prefilled_open=self._prefilled_think(tokens))
            if not closed:
                raise GenerationError(
                    f"thinking used the whole budget of {budget} tokens and no answer came; raise "
                    "max_tokens, or turn thinking off",
                )
            return Completion(answer, reasoning, finish, usage)
        reasoning, answer, _closed = split_reasoning(text)
        return Completion(answer, reasoning, finish, usage)

    def _prefilled_think(self, tokens: list[int]) -> bool:
        tail = self.model.llama.detokenize(tokens[-8:], special=True).decode(errors="replace")
        return tail.rstrip().endswith(THINK_OPEN)

    def _run(
        self,
        tokens: list[int],
        boundaries: list[int],
        grammar: str | None,
        engine: str,
        s: Sampling,
        budget: int,
        on_progress: ProgressFn | None,
        cancel: CancelFn | None,
    ) -> tuple[str, str, int, int]:
        model = self.model
        llama = model.llama
        flag = model._abort_flag
        stop_watch = _CancelWatch(cancel, flag)

        def on_token(n: int) -> bool:
            if on_progress is not None:
                on_progress(n, budget)
            return stop_watch.poll()

        constraint = make_constraint(engine, llama, grammar) if grammar is not None else None
        try:
            with stop_watch:
                start, reused = prepare_prefix(llama, model.prefix_cache, tokens, boundaries)
                result = decode(
                    llama, tokens, start, sampling=s, constraint=constraint, budget=budget, on_token=on_token
                )
            text = llama.detokenize(result.tokens, prev_tokens=tokens).decode("utf-8", errors="replace")
        except RuntimeError as exc:
            if stop_watch.cancelled():
                llama.reset()
                raise Cancelled("generation interrupted") from None
            raise GenerationError(f"llama.cpp failed while generating: {exc}") from None
        finally:
            if constraint is not None:
                constraint.close()
        if stop_watch.cancelled() or result.finish_reason == "cancelled":
            llama.reset()
            raise Cancelled("generation interrupted")
        return text, result.finish_reason, len(result.tokens), reused


class _CancelWatch:
    """Polls ``cancel`` on a thread and raises llama.cpp's abort flag, so a long prompt
    evaluation inside ``llama_decode`` stops too, not only the loop between tokens."""

    def __init__(self, cancel: CancelFn | None, flag: list[bool]) -> None:
        self.cancel = cancel
        self.flag = flag
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._was_cancelled = False

    def __enter__(self) -> _CancelWatch:
        self.flag[0] = False
        if self.cancel is not None:
            self._thread = threading.Thread(target=self._poll, name="mangaka-cancel", daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            try:
                if self.cancel():
                    self.flag[0] = True
                    return
            except Exception:  # noqa: BLE001 - a raising cancel check counts as a cancel
                self.flag[0] = True
                return

    def cancelled(self) -> bool:
        return self._was_cancelled or self.flag[0]

    def poll(self) -> bool:
        """Ask ``cancel`` now (between tokens), not only on the watcher's next tick."""
        if not self.flag[0] and self.cancel is not None and self.cancel():
            self.flag[0] = True
        return self.flag[0]

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._was_cancelled = self.flag[0]
        self.flag[0] = False  # later decodes must not abort
