"""An OpenAI-compatible server (llama-server, vLLM, llama-cpp-python's server) behind the same
``LLM`` protocol as the in-process backend.

What differs between servers stays here (ARCHITECTURE.md has the table of what each accepts):

- ``llama-server``: ``response_format`` ``{"type": "json_schema", "json_schema": {"schema": S}}``;
  thinking per request through ``chat_template_kwargs``;
- ``vllm``: ``response_format`` ``{"type": "json_schema", "json_schema": {"name", "schema"}}``;
  ``chat_template_kwargs``; ``repetition_penalty``;
- ``llama-cpp-python``: ``response_format`` ``{"type": "json_object", "schema": S}``; thinking is
  a server flag only;
- ``openai``: as vLLM, without the sampling extensions.

``flavor="auto"`` asks ``/v1/models`` who owns the model. Replies are streamed (server-sent
events) for progress and interrupt. Connection errors, timeouts, a stream cut in the middle, 429
and 5xx are retried with backoff, up to ``retries`` times; 401/403, an unknown model and a prompt
too long for the server's context are errors at once. The API key is read from the environment
variable named by ``api_key_env`` on every call, and never written into a message or a log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from ..errors import Cancelled, ContextOverflowError, GenerationError, InputError, MangakaError
from .base import CallContext, CancelFn, Completion, Message, ProgressFn, Sampling, Usage
from .chat import normalize_messages, split_reasoning

log = logging.getLogger(__name__)

FLAVORS = ("auto", "llama-server", "vllm", "llama-cpp-python", "openai")
_OWNERS = {"llamacpp": "llama-server", "vllm": "vllm", "me": "llama-cpp-python"}


class AuthError(MangakaError):
    """The server refused the API key (or wants one)."""


class _Retry(Exception):
    """A failure worth another try (connection, timeout, cut stream, 429/5xx)."""


def request_body(
    flavor: str,
    model: str,
    messages: list[Message],
    *,
    schema: dict[str, Any] | None,
    sampling: Sampling,
    max_tokens: int,
    thinking: bool,
) -> dict[str, Any]:
    """The chat-completions request for ``flavor``: the one place the servers' dialects differ."""
    s = sampling
    body: dict[str, Any] = {
        "model": model or "default",
        "messages": normalize_messages(messages),
        "stream": True,
        "max_tokens": max_tokens,
        "temperature": s.temperature,
        "top_p": s.top_p,
        "presence_penalty": s.presence_penalty,
        "seed": s.seed,
    }
    if flavor != "openai":
        body.update(top_k=s.top_k, min_p=s.min_p)
        body["repetition_penalty" if flavor == "vllm" else "repeat_penalty"] = s.repeat_penalty
    if flavor in ("llama-server", "vllm"):
        body["chat_template_kwargs"] = {"enable_thinking": thinking}
        body["stream_options"] = {"include_usage": True}
    if schema is not None:
        if flavor == "llama-cpp-python":
            body["response_format"] = {"type": "json_object", "schema": schema}
        elif flavor == "llama-server":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"schema": without_closed_tuples(schema)},
            }
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": schema, "strict": True},
            }
    return body


def without_closed_tuples(schema: Any) -> Any:
    """``schema`` with ``"items": false`` dropped next to ``prefixItems``: llama-server's parser
    wants ``items`` to be an object, and its grammar for ``prefixItems`` is a closed tuple anyway
    (the reply is still validated against the original schema)."""
    if isinstance(schema, list):
        return [without_closed_tuples(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: without_closed_tuples(v) for k, v in schema.items()}
    if "prefixItems" in out and out.get("items") is False:
        del out["items"]
        out.setdefault("maxItems", len(out["prefixItems"]))
    return out


class OpenAICompatibleLLM:
    """``complete`` over HTTP; ``concurrency`` bounds the requests in flight from this handle."""

    def __init__(
        self,
        base_url: str,
        model: str = "",
        *,
        api_key_env: str | None = None,
        flavor: str = "auto",
        concurrency: int = 1,
        retries: int = 5,
        read_timeout: float = 120.0,
        backoff: float = 0.5,
    ) -> None:
        if flavor not in FLAVORS:
            raise InputError(f"server flavor {flavor!r} is not one of: {', '.join(FLAVORS)}")
        if not base_url.startswith(("http://", "https://")):
            raise InputError(f"base URL {base_url!r} must start with http:// or https://")
        if api_key_env is not None and not api_key_env.replace("_", "").isalnum():
            raise InputError(
                f"api_key_env must be the NAME of an environment variable (like OPENAI_API_KEY), "
                f"not a key; got a value {len(api_key_env)} characters long"
            )
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.api_key_env = api_key_env or None
        self.flavor = flavor
        self.concurrency = max(1, concurrency)
        self.retries = retries
        self.read_timeout = read_timeout
        self.backoff = backoff
        self.name = f"{model or 'default'} at {self.base_url}"
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._count_lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests this handle had in flight at once
        self.n_ctx = 0  # unknown: the server checks the context and says so

    # -- the protocol --------------------------------------------------------------------------

    def count_tokens(self, messages: list[Message], *, thinking: bool = False) -> int:
        """A rough count (3 characters a token); the server itself checks its context."""
        return sum(len(m.get("content", "")) for m in messages) // 3 + 4 * len(messages)

    def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None = None,
        sampling: Sampling | None = None,
        max_tokens: int = 1024,
        thinking: bool = False,
        context: CallContext | None = None,
    ) -> Completion:
        ctx = context or CallContext()
        on_progress, cancel = ctx.on_progress, ctx.cancel
        if schema is not None and thinking:
            log.info("thinking turned off: output is constrained to a schema")
            thinking = False
        with self._slots:
            with self._count_lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                return _run(
                    lambda: self._complete(
                        messages, schema, sampling or Sampling(), max_tokens, thinking, on_progress, cancel
                    )
                )
            finally:
                with self._count_lock:
                    self.in_flight -= 1

    # -- HTTP ----------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise AuthError(
                    f"the environment variable {self.api_key_env} is not set; set it to the API key of "
                    f"{self.base_url} before starting ComfyUI (the key is never stored in the workflow)"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    async def _detect(self, session: Any) -> str:
        if self.flavor != "auto":
            return self.flavor
        async with session.get(f"{self.base_url}/v1/models", headers=self._headers()) as response:
            await self._raise_for_status(response)
            data = await response.json(content_type=None)
        models = data.get("data") or []
        owner = str(models[0].get("owned_by", "")) if models else ""
        self.flavor = _OWNERS.get(owner, "openai")
        log.info("%s is %s (owned_by %r)", self.base_url, self.flavor, owner)
        return self.flavor

    async def _raise_for_status(self, response: Any) -> None:
        if response.status < 400:
            return
        text = (await response.text())[:800]
        where = f"{self.base_url} (model {self.model or 'default'})"
        if response.status in (401, 403):
            hint = (
                f"check the key in the environment variable {self.api_key_env}"
                if self.api_key_env
                else "the server wants an API key: name its environment variable in api_key_env"
            )
            raise AuthError(
                f"{where} refused the request: HTTP {response.status}; {hint} (the key is not shown)"
            )
        if response.status == 404:
            raise GenerationError(
                f"{where}: HTTP 404 ({text.strip()[:300]}); check the base URL and the model name"
            )
        if response.status == 400 and ("context" in text.lower() or "too long" in text.lower()):
            raise ContextOverflowError(
                f"{where}: the prompt does not fit the server's context ({text.strip()[:300]}); shorten the "
                "chapter or start the server with a larger context",
                0,
                0,
            )
        if response.status == 429 or response.status >= 500:
            raise _Retry(f"HTTP {response.status}: {text.strip()[:300]}")
        raise GenerationError(f"{where}: HTTP {response.status}: {text.strip()[:500]}")

    async def _complete(
        self,
        messages: list[Message],
        schema: dict[str, Any] | None,
        sampling: Sampling,
        max_tokens: int,
        thinking: bool,
        on_progress: ProgressFn | None,
        cancel: CancelFn | None,
    ) -> Completion:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=None, sock_connect=10.0, sock_read=self.read_timeout)
        last = ""
        async with aiohttp.ClientSession(timeout=timeout) as session:
            for attempt in range(self.retries + 1):
                if cancel is not None and cancel():
                    raise Cancelled("generation interrupted")
                try:
                    flavor = await self._detect(session)
                    body = request_body(
                        flavor, self.model, messages, schema=schema, sampling=sampling,
                        max_tokens=max_tokens, thinking=thinking,
                    )  # fmt: skip
                    return await self._stream(session, body, max_tokens, thinking, on_progress, cancel)
                except _Retry as exc:
                    last = str(exc)
                except (
                    aiohttp.ClientConnectionError,
                    aiohttp.ClientPayloadError,
                    asyncio.TimeoutError,
                ) as exc:
                    last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if attempt < self.retries:
                    delay = min(10.0, self.backoff * 2**attempt)
                    log.warning(
                        "%s: %s; retry %d of %d in %.1f s",
                        self.base_url,
                        last,
                        attempt + 1,
                        self.retries,
                        delay,
                    )
                    await _sleep(delay, cancel)
        raise GenerationError(
            f"{self.base_url}: no answer after {self.retries + 1} tries; last error: {last}"
        )

    async def _stream(
        self,
        session: Any,
        body: dict[str, Any],
        max_tokens: int,
        thinking: bool,
        on_progress: ProgressFn | None,
        cancel: CancelFn | None,
    ) -> Completion:
        text: list[str] = []
        reasoning: list[str] = []
        finish: str | None = None
        usage = Usage()
        chunks = 0
        done = False
        url = f"{self.base_url}/v1/chat/completions"
        async with session.post(url, json=body, headers=self._headers()) as response:
            await self._raise_for_status(response)
            async for raw in response.content:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    done = True
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    continue
                if "error" in event:
                    raise _Retry(f"the server reported an error mid-stream: {str(event['error'])[:300]}")
                if event.get("usage"):
                    u = event["usage"]
                    usage = Usage(
                        u.get("prompt_tokens", 0), u.get("completion_tokens", 0), u.get("prompt_tokens", 0)
                    )
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                    if delta.get("reasoning_content"):
                        reasoning.append(delta["reasoning_content"])
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                    if delta.get("content") or delta.get("reasoning_content"):
                        chunks += 1
                        if on_progress is not None:
                            on_progress(min(chunks, max_tokens), max_tokens)
                if cancel is not None and cancel():
                    raise Cancelled("generation interrupted")
        if finish is None:
            if not chunks and not done:
                raise GenerationError(
                    f"{self.base_url} sent an empty reply (llama-cpp-python's server does this when the "
                    "prompt exceeds its context); shorten the chapter or raise the server's context"
                )
            raise _Retry("the stream ended before the reply was complete")
        answer, thought = "".join(text), "".join(reasoning)
        if body.get("response_format"):
            answer, escaped = escape_control_characters(answer)
            if escaped:
                log.info(
                    "%s: escaped %d raw control characters inside JSON strings (the server's grammar lets "
                    "them through; llama-cpp-python's server does)",
                    self.base_url,
                    escaped,
                )
        if thinking and not thought:
            thought, answer, _closed = split_reasoning(answer)
        if not usage.completion_tokens:
            usage.completion_tokens = chunks
        return Completion(answer.strip(), thought.strip(), "length" if finish == "length" else "stop", usage)


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def escape_control_characters(text: str) -> tuple[str, int]:
    """``text`` with raw control characters inside JSON strings written as escapes (JSON forbids
    them raw; the characters themselves are kept), and how many there were. Outside strings,
    nothing changes."""
    out: list[str] = []
    in_string = escaped = False
    count = 0
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ord(ch) < 0x20:
                out.append(_ESCAPES.get(ch, f"\\u{ord(ch):04x}"))
                count += 1
                continue
        elif ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out), count


async def _sleep(seconds: float, cancel: CancelFn | None) -> None:
    end = asyncio.get_running_loop().time() + seconds
    while (left := end - asyncio.get_running_loop().time()) > 0:
        if cancel is not None and cancel():
            raise Cancelled("generation interrupted")
        await asyncio.sleep(min(0.1, left))


def _run(make: Callable[[], Any]) -> Any:
    """Run a coroutine to the end from synchronous code, inside or outside an event loop."""
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:
        return asyncio.run(make())  # outside the except block: no chained "no running event loop"
    result: list[Any] = []
    error: list[BaseException] = []

    def worker() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            error.append(exc)

    thread = threading.Thread(target=worker, name="mangaka-remote")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]
