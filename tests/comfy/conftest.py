"""Fixtures for the comfy tier: a real ComfyUI 0.3.75 with the pack linked into custom_nodes/.

- ``comfy``: the session's server with this checkout linked as ``custom_nodes/comfyui-mangaka``
  and the test-only probe pack ``tests/comfy/probes`` as ``custom_nodes/mangaka-test-probes``.
- ``comfy_factory(packs={name: folder}, extra_args=(), env=None)``: start another server (its
  own base directory and port), e.g. with a different pack; stopped at the end of the session.
- ``comfy_install``: where ComfyUI and its python are (see ``harness.find_install``).
- ``frontend`` (module scope, parametrized over ``FRONTENDS``) and ``browser_server``: the browser
  tests' server, the ``server`` with 0.3.75's own frontend ("bundled") or a second one serving
  ``comfyui-frontend-package`` 1.58.1 (``--front-end-root``, unpacked by tests/comfy_env.py);
  ``browser_artifacts``: where that frontend's screenshots are kept. Without the newer frontend
  its tests skip, or fail where ``MANGAKA_REQUIRE_BROWSER=1``.

Every test under tests/comfy gets the ``comfy`` marker from tests/conftest.py. When ComfyUI cannot
be found or prepared the tests are skipped, or fail when ``MANGAKA_REQUIRE_COMFY=1``.
"""

from __future__ import annotations

import os
import threading

import pytest

try:
    from .harness import CHECKOUT, PACK_FOLDER, ComfyInstall, ComfyServer, ComfyUnavailable, find_install
except ImportError:  # tests/comfy is not a package: pytest put this folder on sys.path instead
    from harness import CHECKOUT, PACK_FOLDER, ComfyInstall, ComfyServer, ComfyUnavailable, find_install

from mangaka.devtools.tiny_models import write_lora, write_model, write_unsupported_model
from tests.comfy.support import LORA, MODEL

PROBES_FOLDER = "mangaka-test-probes"
BUNDLED = "bundled"
NEWER = "1.58.1"  # tests/comfy_env.py's FRONTEND_VERSION
FRONTENDS = (BUNDLED, NEWER)
PROBES = CHECKOUT / "tests" / "comfy" / "probes"


@pytest.fixture(scope="session")
def comfy_install() -> ComfyInstall:
    try:
        return find_install()
    except ComfyUnavailable as exc:
        if os.environ.get("MANGAKA_REQUIRE_COMFY") == "1":
            pytest.fail(
                f"ComfyUI is required (MANGAKA_REQUIRE_COMFY=1) but unavailable: {exc}", pytrace=False
            )
        pytest.skip(f"ComfyUI unavailable: {exc}")


@pytest.fixture(scope="session")
def comfy_factory(comfy_install, tmp_path_factory):
    servers: list[ComfyServer] = []

    def start(packs=None, extra_args=(), env=None) -> ComfyServer:
        packs = {PACK_FOLDER: CHECKOUT, PROBES_FOLDER: PROBES} if packs is None else packs
        base = tmp_path_factory.mktemp("comfy-base")
        server = ComfyServer(comfy_install, base, packs, extra_args=extra_args, env=env)
        servers.append(server)
        return server.start()

    yield start
    # All at once: a server still busy with an abandoned prompt takes its full stop timeout (15 s),
    # and one after the other they added minutes to the session's end.
    stopping = [threading.Thread(target=server.stop) for server in servers]
    for thread in stopping:
        thread.start()
    for thread in stopping:
        thread.join()


@pytest.fixture(scope="session")
def comfy(comfy_factory) -> ComfyServer:
    return comfy_factory()


def _with_models(comfy: ComfyServer) -> ComfyServer:
    models, loras = comfy.base_dir / "models" / "LLM", comfy.base_dir / "models" / "llm_loras"
    model = write_model(models / MODEL, "qwen35moe", context_length=32768)
    write_lora(loras / LORA, model)
    write_unsupported_model(models / "tiny-qwen99moe.gguf")
    write_lora(loras / "tiny-qwen3moe-lora.gguf", "qwen3moe")
    return comfy


@pytest.fixture(scope="module")
def server(comfy):  # one per test module, as each module used to import it
    """The session's server with a tiny qwen35moe model and its LoRA in models/LLM and models/llm_loras."""
    return _with_models(comfy)


@pytest.fixture(scope="session")
def newer_frontend_server(comfy_factory, comfy_install) -> ComfyServer:
    """A second server, with the same packs and models, serving the newer frontend."""
    root = comfy_install.frontend
    if root is None or not (root / "index.html").is_file():
        reason = f"frontend {NEWER} is not unpacked (python tests/comfy_env.py does it): {root}"
        if os.environ.get("MANGAKA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test is required (MANGAKA_REQUIRE_BROWSER=1): {reason}", pytrace=False)
        pytest.skip(reason)
    return _with_models(comfy_factory(extra_args=("--front-end-root", str(root))))


@pytest.fixture(scope="module", params=FRONTENDS)
def frontend(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def browser_server(request, frontend, server) -> ComfyServer:
    return server if frontend == BUNDLED else request.getfixturevalue("newer_frontend_server")


@pytest.fixture
def browser_artifacts(artifacts, frontend):
    """The bundled frontend's screenshots where they always were; the newer one's in a subfolder."""
    folder = artifacts if frontend == BUNDLED else artifacts / f"frontend-{frontend}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
