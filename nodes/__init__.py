"""ComfyUI adapters for the Mangaka engine: thin nodes, one file per topic."""

from __future__ import annotations

import asyncio
import logging

from comfy_api.latest import ComfyExtension, io
from typing_extensions import override

from ..mangaka.llm.loading import cached_models, release_models
from . import _comfy, bible, chapters, compose, export, llm, memory, page, screenplay, video

log = logging.getLogger("mangaka")


def _add_routes() -> None:
    """``GET /mangaka/llm`` lists the loaded LLMs; ``POST /mangaka/free`` releases them at once
    (ComfyUI's own ``/free`` is carried out by the queue worker, after a running prompt)."""
    try:
        from aiohttp import web
        from server import PromptServer
    except ImportError:
        return
    if getattr(PromptServer, "instance", None) is None:
        return

    @PromptServer.instance.routes.get("/mangaka/llm")
    async def _loaded(_request):
        loaded = [m.report() for m in cached_models() if m.llama is not None]
        return web.json_response({"loaded": loaded, "hooks": memory.hooks_in_place()})

    @PromptServer.instance.routes.post("/mangaka/free")
    async def _free(_request):
        # In a worker thread: release waits for a running generation, the server must not.
        released = await asyncio.get_running_loop().run_in_executor(None, release_models)
        return web.json_response({"released": released})

    if hasattr(PromptServer.instance, "add_on_prompt_handler"):

        def _on_prompt(json_data):
            # Each queued prompt, ours or not (an image-only run must still release the LLM):
            # the memory wrappers put back if ComfyUI undid them after the last prompt.
            try:
                memory.check_hooks()
            except Exception:  # never refuse a prompt over our bookkeeping
                log.exception("mangaka: could not check the memory hooks; going on")
            return json_data

        PromptServer.instance.add_on_prompt_handler(_on_prompt)


class MangakaExtension(ComfyExtension):
    @override
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [
            *llm.NODES,
            *screenplay.NODES,
            *bible.NODES,
            *compose.NODES,
            *page.NODES,
            *export.NODES,
            *chapters.NODES,
            *video.NODES,
        ]


async def comfy_entrypoint() -> MangakaExtension:
    return MangakaExtension()


_comfy.register_model_folders()
memory.install()
_add_routes()
