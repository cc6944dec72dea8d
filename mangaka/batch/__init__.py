"""Batch runs against ComfyUI servers: the aiohttp client, workflows, and the book queue."""
