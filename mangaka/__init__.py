"""Mangaka engine: novel chapter → structured screenplay → Stable Diffusion prompts → manga pages.

Plain Python; never imports ComfyUI or torch. Heavy libraries (llama_cpp) are imported where used.
"""

__version__ = "0.1.0"
