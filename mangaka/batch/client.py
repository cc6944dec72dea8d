"""A small aiohttp client for one ComfyUI server: ``/object_info``, ``/prompt``, ``/queue``,
``/history``, ``/view`` and the progress websocket."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from ..errors import InputError, MangakaError

log = logging.getLogger(__name__)


class ServerError(MangakaError):
    """The server answered, but not as expected (an HTTP error, a refused prompt)."""


class ServerUnreachable(MangakaError):
    """No answer from the server: the URL and the reason."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"ComfyUI server {url} is unreachable: {reason}")
        self.url = url
        self.reason = reason


MAX_URL = 2048
EXAMPLE_URL = "http://127.0.0.1:8188"


def server_url(url: str) -> str:
    """A ComfyUI server's address as the client uses it: ``http://`` added when no scheme is given,
    no trailing slash. ``InputError`` naming the address and the fix when it is not an http(s) URL
    with a host and a valid port (checked before anything is read or posted)."""
    from urllib.parse import urlsplit

    shown = url if len(url) <= 80 else url[:77] + "…"
    given = url.strip().rstrip("/")
    if not given:
        raise InputError(f"--server {url!r} is empty; give the ComfyUI address, e.g. {EXAMPLE_URL}")
    if len(given) > MAX_URL:
        raise InputError(
            f"--server {shown} is {len(given)} characters long; give the ComfyUI address, e.g. {EXAMPLE_URL}"
        )
    if "://" in given and not given.lower().startswith(("http://", "https://")):
        raise InputError(f"--server {shown}: only http:// and https:// addresses; give e.g. {EXAMPLE_URL}")
    if not given.lower().startswith(("http://", "https://")):
        given = "http://" + given
    try:
        parts = urlsplit(given)
        port = parts.port  # a port out of 0..65535 or not a number raises here
        host = parts.hostname
    except ValueError as exc:
        raise InputError(
            f"--server {shown} is not a valid address ({exc}); give e.g. {EXAMPLE_URL}"
        ) from None
    if not host or any(ch.isspace() for ch in given) or port == 0:
        raise InputError(f"--server {shown} has no valid host and port; give e.g. {EXAMPLE_URL}")
    try:
        import yarl  # what aiohttp will make of it

        yarl.URL(given)
    except (ValueError, TypeError) as exc:
        raise InputError(
            f"--server {shown} is not a valid address ({exc}); give e.g. {EXAMPLE_URL}"
        ) from None
    return given


class ComfyClient:
    """One server. Create it inside a running event loop; ``close()`` when done."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        import aiohttp

        self.url = server_url(url)
        self._aiohttp = aiohttp
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))

    async def close(self) -> None:
        await self.session.close()

    async def _request(self, method: str, path: str, *, raw: bool = False, **kwargs: Any) -> Any:
        """The response: parsed when it is JSON, unless ``raw`` (a file's bytes, whatever its type)."""
        aiohttp = self._aiohttp
        try:
            async with self.session.request(method, self.url + path, **kwargs) as response:
                body = await response.read()
                if response.status >= 400:
                    text = body.decode("utf-8", errors="replace")
                    try:
                        detail: Any = json.loads(text)
                    except ValueError:
                        detail = text[:500]
                    raise ServerError(f"{self.url}{path}: HTTP {response.status}: {_describe(detail)}")
                if response.content_type == "application/json" and not raw:
                    return json.loads(body)
                return body
        except (aiohttp.ClientConnectionError, aiohttp.InvalidURL, asyncio.TimeoutError, OSError) as exc:
            raise ServerUnreachable(self.url, str(exc) or type(exc).__name__) from None

    async def object_info(self) -> dict[str, Any]:
        return await self._request("GET", "/object_info")

    async def post_prompt(self, prompt: dict[str, Any], prompt_id: str, client_id: str) -> dict[str, Any]:
        body = {"prompt": prompt, "prompt_id": prompt_id, "client_id": client_id}
        return await self._request("POST", "/prompt", json=body)

    async def history(self, prompt_id: str) -> dict[str, Any] | None:
        found = await self._request("GET", f"/history/{prompt_id}")
        return found.get(prompt_id) if isinstance(found, dict) else None

    async def queued(self, prompt_id: str) -> bool:
        """Whether ``prompt_id`` is running or waiting on this server."""
        queue = await self._request("GET", "/queue")
        items = [*queue.get("queue_running", []), *queue.get("queue_pending", [])]
        return any(len(item) > 1 and item[1] == prompt_id for item in items)

    async def view(self, filename: str, subfolder: str, kind: str) -> bytes:
        params = {"filename": filename, "subfolder": subfolder, "type": kind}
        return await self._request("GET", "/view", params=params, raw=True)  # a .json file stays bytes

    async def events(self, client_id: str) -> AsyncIterator[dict[str, Any]]:
        """The server's JSON messages for ``client_id`` (binary previews skipped) until the
        socket closes; ``ServerUnreachable`` when it cannot be opened."""
        aiohttp = self._aiohttp
        ws_url = self.url.replace("http", "ws", 1) + f"/ws?clientId={client_id}"
        try:
            socket = await self.session.ws_connect(ws_url, heartbeat=10.0)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
            raise ServerUnreachable(self.url, f"websocket: {exc or type(exc).__name__}") from None
        async with socket:
            async for message in socket:
                if message.type == aiohttp.WSMsgType.TEXT:
                    try:
                        yield json.loads(message.data)
                    except ValueError:
                        continue
                elif message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                    break


def _describe(detail: Any) -> str:
    """A ComfyUI error body in one readable paragraph (``/prompt``'s node errors included)."""
    if not isinstance(detail, dict):
        return str(detail)
    parts = []
    error = detail.get("error")
    if isinstance(error, dict):
        parts.append(f"{error.get('message', '')} {error.get('details', '')}".strip())
    for node_id, node in (detail.get("node_errors") or {}).items():
        for item in node.get("errors", []):
            parts.append(
                f"node {node_id} ({node.get('class_type')}): {item.get('message')} {item.get('details', '')}"
            )
    return "; ".join(p for p in parts if p) or json.dumps(detail)[:500]
