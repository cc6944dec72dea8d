#!/usr/bin/env python3
"""The pack's install step, as ComfyUI-Manager and the Comfy Registry run it: after the lines of
requirements.txt, ``python install.py`` in this folder with the Python that runs ComfyUI.

It installs llama-cpp-python built for this machine with ``native/install.py`` (CPU, or CUDA when
nvcc and nvidia-smi are found): the wheel it built before when there is one (seconds, keyed by
version, target and flags under ``~/.cache/mangaka``), else one build (minutes). Arguments go to
``native/install.py`` (``python install.py --target cuda --cuda-arch 89``). requirements.txt
leaves llama-cpp-python out on purpose: there pip would compile it with its own defaults first.

Standard library only.
"""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    script = Path(__file__).resolve().parent / "native" / "install.py"
    sys.argv = [str(script), *sys.argv[1:]]
    runpy.run_path(str(script), run_name="__main__")
