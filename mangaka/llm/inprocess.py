"""The in-process backend: a GGUF model run by llama-cpp-python inside this Python process.

- ``load_model(path, options)`` returns a cached ``LoadedModel`` (keyed by file and options), so a
  second run does not reload; ``release_models()`` frees them (hooked to ComfyUI's ``/free``).
- ``LlamaCppLLM(model, lora=…, lora_scale=…)`` is a light handle implementing the ``LLM``
  protocol; the LoRA is attached to the loaded model after load (mmap kept), its scale applied,
  or detached, just before each call, so handles with different adapters share one model.

This module holds the generation side (``LlamaCppLLM`` and the cancel watcher). Loading and the
model cache live in ``mangaka.llm.loading`` (its two llama-cpp-python patches in
``mangaka.llm.patches``), adapters in ``mangaka.llm.lora``: callers import those names from there.
``LlamaCppLLM`` calls ``load_model`` through this module's namespace, so replacing
``mangaka.llm.inprocess.load_model`` (as tests do) takes effect.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from ..errors import Cancelled, ContextOverflowError, GenerationError, MangakaError
from .base import CallContext, CancelFn, Completion, Message, ProgressFn, Sampling, Usage
from .chat import THINK_OPEN, normalize_messages, split_reasoning
from .constrain import DEFAULT_ENGINE, ENGINES, make_constraint
from .decode import DEFAULT_JUMP_FORWARD, DecodeResult, decode
from .grammar import schema_to_gbnf
from .interrupt import InterruptToAbort
from .loading import (
    LoadedModel,
    LoadOptions,
    load_model,
    release_model,
)
from .lora import apply_lora, check_adapter, check_lora_scale
from .options import KEEP_LOADED, RELEASE_AFTER_RUN, RUN_OPTIONS
from .prefix import prepare as prepare_prefix

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------- generation


class LlamaCppLLM:
    """An ``LLM`` over a cached loaded model, optionally with a LoRA at a strength.

    Cheap to create and to keep in ComfyUI's output cache: it holds the file and options, and
    loads the model again if ``release_models()`` freed it in between. ``release_after_run``
    (``memory=RELEASE_AFTER_RUN``) asks every caller to free the model when its work is done
    (``release_if_asked``).
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
        memory: str = KEEP_LOADED,
        jump_forward: str = DEFAULT_JUMP_FORWARD,
    ) -> None:
        RUN_OPTIONS["memory"].check(memory)
        RUN_OPTIONS["jump_forward"].check(jump_forward)
        self.release_after_run = memory == RELEASE_AFTER_RUN
        self.path = Path(path)
        lora_scale = check_lora_scale(lora_scale)
        self.engine = engine  # constrained decoding: mangaka.llm.constrain.ENGINES
        # decode the tokens the schema forces in one batch (llguidance engine; decode.py):
        # "exact" verifies them against the model's own choices, "canonical" takes them unverified
        self.jump_forward = jump_forward
        self.last_forced_tokens = 0  # of the last call's generated tokens, those the grammar forced
        self.last_draft_sizes: list[int] = []  # the last call's exact jump-forward drafts, in tokens
        self.last_redone_rows: list[int] = []  # ... and the rows evaluated again where one was cut
        self.options = options or LoadOptions()
        self._model = load_model(self.path, self.options, on_progress, cancel)
        self.lora = Path(lora) if lora else None
        self.lora_scale = float(lora_scale)
        if self.lora is not None:
            check_adapter(self._model, self.lora)
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

    @property
    def parameters(self) -> int:
        """The model's size in parameters (its tensors' elements), read from its file's header."""
        return self._model.info.parameters

    def release(self) -> bool:
        """Free the model now (the next call loads it again); False when it was not loaded."""
        return release_model(self._model)

    def _formatter(self, generation_prompt: bool = True) -> Any:
        return self.model.chat_formatter(generation_prompt)

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
        engine: str | None = None,
        context: CallContext | None = None,
    ) -> Completion:
        ctx = context or CallContext()
        on_progress, cancel = ctx.on_progress, ctx.cancel
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
            forced = self.last_forced_tokens  # under the lock: this call's
        usage = Usage(
            prompt_tokens=n_prompt,
            completion_tokens=n_out,
            prompt_tokens_decoded=n_prompt - reused,
            forced_tokens=forced,
        )
        if thinking:
            reasoning, answer, closed = split_reasoning(text, prefilled_open=self._prefilled_think(tokens))
            if not closed:
                raise GenerationError(
                    f"thinking used the whole budget of {budget} tokens and no answer came; raise "
                    "max_tokens, or turn thinking off",
                    Completion("", reasoning, finish, usage),
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
        flag = model.abort_flag
        stop_watch = _CancelWatch(cancel, flag)

        def on_token(n: int) -> bool:
            if on_progress is not None:
                on_progress(n, budget)
            return stop_watch.poll()

        constraint = make_constraint(engine, llama, grammar) if grammar is not None else None
        self.last_forced_tokens = 0
        self.last_draft_sizes = []
        self.last_redone_rows = []
        interrupt = InterruptToAbort(flag)

        def generate() -> tuple[int, DecodeResult]:
            start, reused = prepare_prefix(llama, model.prefix_cache, tokens, boundaries)
            result = decode(
                llama,
                tokens,
                start,
                sampling=s,
                constraint=constraint,
                budget=budget,
                on_token=on_token,
                jump_forward=self.jump_forward,
            )
            return reused, result

        try:
            with interrupt, stop_watch:
                reused, result = model.decode_thread.run(generate, flag)
            text = llama.detokenize(result.tokens, prev_tokens=tokens).decode("utf-8", errors="replace")
        except RuntimeError as exc:
            if interrupt.hit or stop_watch.cancelled():
                llama.reset()
                interrupt.raise_if_hit()
                raise Cancelled("generation interrupted") from None
            raise GenerationError(f"llama.cpp failed while generating: {exc}") from None
        finally:
            if constraint is not None:
                self.last_forced_tokens = constraint.forced_tokens
                self.last_draft_sizes = constraint.draft_sizes
                self.last_redone_rows = constraint.redone_rows
                constraint.close()
        if interrupt.hit or stop_watch.cancelled() or result.finish_reason == "cancelled":
            llama.reset()
            interrupt.raise_if_hit()
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


def release_if_asked(llm: object, user: str) -> None:
    """Free ``llm``'s model when it was loaded with ``release after each run``; every caller of
    the LLM calls this when its work ends (success or error). ``user`` names the caller in the log."""
    if isinstance(llm, LlamaCppLLM) and llm.release_after_run:
        size = llm._model.size_bytes
        if llm.release():
            log.info(
                "mangaka: released %s (%.0f MB) after %s (%s)",
                llm.path.name,
                size / 2**20,
                user,
                RELEASE_AFTER_RUN,
            )
