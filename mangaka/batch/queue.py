"""``python -m mangaka queue``: a whole book through a ComfyUI workflow, chapter by chapter,
on one or several servers, resumable.

Each server runs one chapter at a time. A chapter's ``prompt_id`` is chosen and written to the
state file before it is posted, so a rerun after a crash finds the run on its server (finished:
collected; still running: followed) instead of posting it twice. A server that stops answering
gives its chapter back to the others; a chapter whose run fails is reported and the rest go on.

The book's series bible (``OUT/bible.json`` or ``--bible``) goes into every chapter's
Screenwriter and learns each collected chapter's characters: see ``queue_bible.py``, which also
says what order of chapters each chapter's bible reflects with one server and with several.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..book_file import read_book
from ..chapters import DEFAULT_MAX_CHARS, Chapter, parse_range, split_chapters
from ..errors import InputError, MangakaError
from ..fileio import write_atomic
from .client import ComfyClient, ServerError, ServerUnreachable, server_url
from .queue_bible import BIBLE_FILE, QueueBible, open_bible
from .state import ChapterState, QueueState
from .workflow import ChapterInput, check_workflow, find_chapter_input, load_workflow, with_chapter

log = logging.getLogger(__name__)


@dataclass
class QueueResult:
    state: QueueState
    selected: list[int]
    dead_servers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(self.state.chapters[n].status == "done" for n in self.selected)

    def summary(self) -> str:
        rows = []
        for n in self.selected:
            c = self.state.chapters[n]
            detail = f"{len(c.files)} files in {c.folder}/" if c.status == "done" else (c.error or "not run")
            took = f" in {c.seconds:.0f} s" if c.seconds else ""
            rows.append(f"{n:>3}  {c.status:<9} {c.title[:40]:<40} {detail}{took}")
        done = sum(self.state.chapters[n].status == "done" for n in self.selected)
        head = f"{done} of {len(self.selected)} chapters done"
        tail = [f"server {url} stopped answering: {why}" for url, why in self.dead_servers.items()]
        if not self.ok:
            tail.append("rerun the same command to finish the book: finished chapters are skipped")
        return "\n".join([head, *rows, *tail])


class ProgressView:
    """A progress line per book on a terminal (per chapter and book, with ETA); log lines otherwise."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self.running: dict[int, tuple[str, float]] = {}  # chapter → (server, fraction)
        self.durations: list[float] = []
        self.done = 0
        self._logged: dict[int, int] = {}

    def eta(self, servers: int) -> float | None:
        left = self.total - self.done
        if not left:
            return 0.0
        if self.durations:
            per = sum(self.durations) / len(self.durations)
            in_flight = sum(1.0 - f for _, f in self.running.values())
            waiting = max(0, left - len(self.running))
            return (in_flight + waiting) * per / max(1, servers)
        return None

    def update(self, number: int, server: str, fraction: float, servers: int) -> None:
        self.running[number] = (server, max(0.0, min(1.0, fraction)))
        self._draw(servers)
        step = int(fraction * 4)
        if not self.tty and self._logged.get(number, -1) < step < 4:
            self._logged[number] = step
            log.info("chapter %d on %s: %d%%", number, server, 25 * step)

    def finish(self, number: int, seconds: float | None, servers: int) -> None:
        self.running.pop(number, None)
        self.done += 1
        if seconds:
            self.durations.append(seconds)
        self._draw(servers)
        if not self.tty:
            eta = self.eta(servers)
            log.info("book: %d of %d chapters, ETA %s", self.done, self.total, _clock(eta))

    def _draw(self, servers: int) -> None:
        if not self.tty:
            return
        width = 20
        filled = int(width * self.done / max(1, self.total))
        parts = [f"book [{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total}"]
        for number, (server, fraction) in sorted(self.running.items()):
            parts.append(f"ch{number} {int(100 * fraction)}% @{server.split('//')[-1]}")
        parts.append(f"ETA {_clock(self.eta(servers))}")
        self.stream.write("\r" + " · ".join(parts)[:160].ljust(160))
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Run:
    """One queue run: the shared queue of chapters and one worker per server."""

    def __init__(
        self,
        prompt: dict[str, Any],
        where: ChapterInput,
        chapters: dict[int, Chapter],
        state: QueueState,
        out: Path,
        view: ProgressView,
        poll: float,
        dead_after: float,
        bible: QueueBible,
    ) -> None:
        self.prompt = prompt
        self.bible = bible
        self.where = where
        self.chapters = chapters
        self.state = state
        self.out = out
        self.view = view
        self.poll = poll
        self.dead_after = dead_after
        self.pending: asyncio.Queue[int] = asyncio.Queue()
        self.in_flight = 0
        self.live: set[str] = set()
        self.dead: dict[str, str] = {}
        self.n_nodes = max(1, len(prompt))

    # -- one server ------------------------------------------------------------------------------

    async def worker(self, client: ComfyClient, follow: list[int]) -> None:
        self.live.add(client.url)
        try:
            for i, number in enumerate(follow):
                self.in_flight += 1
                if not await self._wait(client, number):
                    for rest in follow[i + 1 :]:  # queued on the dead server: run them elsewhere
                        self._requeue(rest)
                    return
            while True:
                try:
                    number = await asyncio.wait_for(self.pending.get(), timeout=0.2)
                except (asyncio.TimeoutError, TimeoutError):
                    if self.pending.empty() and self.in_flight == 0:
                        return
                    continue
                self.in_flight += 1
                if not await self._submit(client, number):
                    return
        finally:
            self.live.discard(client.url)

    async def _submit(self, client: ComfyClient, number: int) -> bool:
        chapter = self.state.chapters[number]
        chapter.prompt_id, chapter.client_id = str(uuid.uuid4()), str(uuid.uuid4())
        chapter.status, chapter.server, chapter.error = "submitted", client.url, None
        chapter.submissions += 1
        self.state.save()  # the id is on disk before the server has it: a rerun can look it up
        prompt = with_chapter(self.bible.into(self.prompt, number), self.where, self.chapters[number].text)
        log.info("chapter %d (%s) → %s", number, chapter.title, client.url)
        try:
            await client.post_prompt(prompt, chapter.prompt_id, chapter.client_id)
        except ServerError as exc:
            self._fail(number, f"refused by {client.url}: {exc}")
            return True
        except ServerUnreachable as exc:
            self._server_down(client, number, exc.reason)
            return False
        return await self._wait(client, number)

    async def _wait(self, client: ComfyClient, number: int) -> bool:
        """Follow the chapter's run until it is in the server's history; False if the server died."""
        chapter = self.state.chapters[number]
        started = time.monotonic()
        watcher = asyncio.create_task(self._watch(client, number))
        silent_since: float | None = None
        try:
            while True:
                try:
                    entry = await client.history(chapter.prompt_id or "")
                    silent_since = None
                except (ServerUnreachable, ServerError) as exc:
                    silent_since = silent_since or time.monotonic()
                    if time.monotonic() - silent_since > self.dead_after:
                        self._server_down(client, number, getattr(exc, "reason", str(exc)))
                        return False
                    await asyncio.sleep(self.poll)
                    continue
                if entry is not None and entry.get("status", {}).get("completed") is not None:
                    break
                await asyncio.sleep(self.poll)
        finally:
            watcher.cancel()
        status = entry.get("status", {})
        if status.get("status_str") == "success":
            try:
                await self._collect(client, number, entry)
            except ServerUnreachable as exc:
                self._server_down(client, number, exc.reason)
                return False
            chapter.seconds = time.monotonic() - started if chapter.seconds is None else chapter.seconds
            chapter.status = "done"
            self.state.save()
            self.in_flight -= 1
            self.view.finish(number, chapter.seconds, len(self.live))
            log.info("chapter %d done: %d files", number, len(chapter.files))
        else:
            self._fail(number, _execution_error(status))
        return True

    async def _watch(self, client: ComfyClient, number: int) -> None:
        """Progress from the websocket: nodes run so far, and the running node's own progress."""
        chapter = self.state.chapters[number]
        seen: set[str] = set()
        try:
            async for message in client.events(chapter.client_id or ""):
                data = message.get("data", {})
                if data.get("prompt_id") not in (None, chapter.prompt_id):
                    continue
                kind = message.get("type")
                inner = 0.0
                if kind == "executing" and data.get("node"):
                    seen.add(str(data["node"]))
                elif kind == "execution_cached":
                    seen.update(map(str, data.get("nodes", [])))
                elif kind == "progress" and data.get("max"):
                    inner = data["value"] / data["max"]
                fraction = (max(0, len(seen) - 1) + inner) / self.n_nodes
                self.view.update(number, client.url, fraction, len(self.live))
        except (ServerUnreachable, asyncio.CancelledError):
            return
        except Exception as exc:  # noqa: BLE001 - progress display must never end a run
            log.debug("progress of chapter %d: %s", number, exc)

    async def _collect(self, client: ComfyClient, number: int, entry: dict[str, Any]) -> None:
        chapter = self.state.chapters[number]
        folder = self.out / chapter.folder
        files = []
        saved: list[tuple[str, Path]] = []  # (the saving node's class, the file here)
        for node_id, outputs in entry.get("outputs", {}).items():
            kind = str(self.prompt.get(node_id, {}).get("class_type", ""))
            for items in outputs.values():
                if not isinstance(items, list):
                    continue
                for item in items:
                    if isinstance(item, dict) and item.get("filename"):
                        data = await client.view(
                            item["filename"], item.get("subfolder", ""), item.get("type", "output")
                        )
                        name = Path(item["filename"]).name
                        write_atomic(folder / name, data)
                        files.append(name)
                        saved.append((kind, folder / name))
        record = {"prompt_id": chapter.prompt_id, "server": client.url, "outputs": entry.get("outputs", {})}
        write_atomic(folder / "outputs.json", json.dumps(record, ensure_ascii=False, indent=2) + "\n")
        chapter.files = files
        self.bible.learn(number, saved)

    def _fail(self, number: int, message: str) -> None:
        chapter = self.state.chapters[number]
        chapter.status, chapter.error = "failed", message
        self.state.save()
        self.in_flight -= 1
        self.view.finish(number, None, len(self.live))
        log.error("chapter %d (%s) failed: %s", number, chapter.title, message)

    def _requeue(self, number: int) -> None:
        chapter = self.state.chapters[number]
        if chapter.prompt_id:
            chapter.abandoned.append(chapter.prompt_id)
        chapter.status, chapter.server, chapter.prompt_id = "pending", None, None
        self.state.save()
        self.view.running.pop(number, None)
        self.pending.put_nowait(number)

    def _server_down(self, client: ComfyClient, number: int, reason: str) -> None:
        self.dead[client.url] = reason
        self._requeue(number)
        self.in_flight -= 1
        log.warning(
            "server %s stopped answering (%s); chapter %d goes back in the queue", client.url, reason, number
        )


def _execution_error(status: dict[str, Any]) -> str:
    for kind, data in status.get("messages", []):
        if kind == "execution_error":
            message = str(data.get("exception_message", "")).strip()
            return f"{data.get('node_type')} (node {data.get('node_id')}): {message}"
        if kind == "execution_interrupted":
            return "interrupted on the server"
    return f"the run ended with status {status.get('status_str')!r}"


async def _resume(run: _Run, clients: dict[str, ComfyClient], selected: list[int]) -> dict[str, list[int]]:
    """Sort the selected chapters: finished ones skipped, ``submitted`` ones looked up on their
    server (followed when still there), the rest queued. Returns chapters to follow per server."""
    follow: dict[str, list[int]] = {url: [] for url in clients}
    for number in selected:
        chapter = run.state.chapters[number]
        if chapter.status == "done":
            log.info("chapter %d (%s) is done already: skipped", number, chapter.title)
            run.view.done += 1
            continue
        client = clients.get(chapter.server or "")
        if chapter.status == "submitted" and client is not None and chapter.prompt_id:
            try:
                entry = await client.history(chapter.prompt_id)
                if entry is not None or await client.queued(chapter.prompt_id):
                    log.info("chapter %d: its run %s is still on %s", number, chapter.prompt_id, client.url)
                    follow[client.url].append(number)
                    continue
            except (ServerUnreachable, ServerError):
                pass
        if chapter.status == "submitted" and chapter.prompt_id:
            chapter.abandoned.append(chapter.prompt_id)
            log.info(
                "chapter %d: its server no longer knows run %s; submitting again", number, chapter.prompt_id
            )
        chapter.status, chapter.prompt_id, chapter.server, chapter.error = "pending", None, None, None
        run.pending.put_nowait(number)
    run.state.save()
    return follow


async def run_queue(
    book: Path,
    workflow: Path,
    servers: Sequence[str],
    out: Path,
    *,
    chapters: str | None = None,
    chapter_input: str | None = None,
    max_chars: int = DEFAULT_MAX_CHARS,
    poll: float = 0.5,
    dead_after: float = 10.0,
    stream: TextIO | None = None,
    bible: Path | None = None,
) -> QueueResult:
    """Run every selected chapter of ``book`` through ``workflow``; see the module docstring.
    ``bible``: the book's series bible file (default ``out/bible.json``; made when missing, checked
    before anything is posted)."""
    if not servers:
        raise InputError("name at least one ComfyUI server with --server URL")
    servers = list(dict.fromkeys(server_url(url) for url in servers))  # each checked before any work
    text = read_book(book)
    found = split_chapters(text, max_chars=max_chars)
    if not found:
        raise InputError(f"{book} has no text")
    selected = parse_range(chapters, len(found)) if chapters else [c.number for c in found]
    prompt = load_workflow(workflow)
    where = find_chapter_input(prompt, chapter_input)
    bible_path = bible if bible is not None else out / BIBLE_FILE
    open_bible(bible_path)  # a bible that cannot be used stops the book before any server is asked
    clients = {}
    unreachable = {}
    first_info: dict[str, Any] = {}  # the first answering server's /object_info
    for url in dict.fromkeys(servers):
        client = ComfyClient(url)
        try:
            info = await client.object_info()
        except (ServerUnreachable, ServerError) as exc:
            unreachable[client.url] = str(exc)
            await client.close()
            continue
        problems = check_workflow(prompt, info, client.url)
        if problems:
            await client.close()
            for other in clients.values():
                await other.close()
            listed = "\n".join(f"- {p}" for p in problems)
            raise InputError(f"{workflow} cannot run on {client.url}; nothing was submitted:\n{listed}")
        clients[client.url] = client
        first_info = first_info or info
    if not clients:
        raise MangakaError(
            "no ComfyUI server answered:\n" + "\n".join(f"- {why}" for why in unreachable.values())
        )
    for why in unreachable.values():
        log.warning("%s; going on with the others", why)
    try:
        width = max(2, len(str(len(found))))
        states = [ChapterState(c.number, c.title, c.slug(width)) for c in found if c.number in selected]
        workflow_key = json.dumps({"prompt": prompt, "input": str(where)}, sort_keys=True).encode()
        state = QueueState.open(out, _sha256(text.encode()), _sha256(workflow_key), states)
        view = ProgressView(len(selected), stream)
        series = QueueBible(bible_path, prompt, first_info)
        run = _Run(prompt, where, {c.number: c for c in found}, state, out, view, poll, dead_after, series)
        follow = await _resume(run, clients, selected)
        workers = [run.worker(client, follow[url]) for url, client in clients.items()]
        await asyncio.gather(*workers)
        view.close()
        return QueueResult(state, selected, {**unreachable, **run.dead})
    finally:
        for client in clients.values():
            await client.close()
