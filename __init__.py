"""Mangaka: a ComfyUI node pack for AI manga and comic production.

Inside ComfyUI this registers the nodes (V3 API, through ``comfy_entrypoint``). Outside ComfyUI
(tests, the command line) it does nothing: the engine is the ``mangaka`` package.
"""

try:
    import comfy_api.latest  # noqa: F401 - present only inside ComfyUI
except ImportError:
    pass
else:
    from .nodes import comfy_entrypoint  # noqa: F401 - errors inside nodes/ surface as IMPORT FAILED

# The front end: a box on the Save nodes listing the files they wrote (web/js/mangaka.js).
WEB_DIRECTORY = "./web"
