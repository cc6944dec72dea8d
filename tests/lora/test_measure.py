"""``lora/measure.py`` measures bf16 memory whatever the CPU: where bf16 matrix products are
emulated (no AVX-512 BF16 or AMX: about 70x slower than float32), they are computed in float32
blocks written into the same bf16 tensors. Both ways must give the same step memory."""

from __future__ import annotations

import json
import os

import pytest

from mangaka import procs
from mangaka.paths import PACK_ROOT
from tests.lora.support import lora_python


def one_step(python: str, products: str) -> dict:
    """One step of the narrow 2-layer model at 128 tokens (about 10 s; 60-80 s for the bf16 way on
    a CPU that emulates bf16), in a fresh process so that its peak is its own."""
    cmd = [python, "lora/measure.py", "--one", "2", "128", "on", "answer", products, "--small"]
    done = procs.run(cmd, cwd=PACK_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_float32_products_keep_the_bf16_step_memory_and_loss():
    python = lora_python()
    native, blocks = one_step(python, "bf16"), one_step(python, "float32")
    # Measured here: 249 / 256 MB (an AVX2-only CPU's kernels), 282 / 287 MB (AVX-512 BF16): the
    # blocks add at most 12 MiB of transient memory. A mode that kept float32 copies of the
    # operands (or measured a float32 model) would need about twice as much.
    assert blocks["extra_bytes"] == pytest.approx(native["extra_bytes"], rel=0.05), (native, blocks)
    # The same arithmetic up to bf16 rounding of the products' results.
    assert blocks["loss"] == pytest.approx(native["loss"], rel=1e-3), (native, blocks)


def test_auto_chooses_float32_products_where_bf16_is_emulated():
    """oneDNN and ATen limited to AVX2 (``ONEDNN_MAX_CPU_ISA``, ``ATEN_CPU_CAPABILITY``) emulate
    bf16 as an AMD EPYC without AVX-512 does (0.8 against 77 GFLOPS measured): ``auto`` must see
    it by timing, whatever the processor's name."""
    code = (
        "import json, sys; sys.path.insert(0, 'lora'); import measure; "
        "print(json.dumps(measure.choose_products('auto')))"
    )
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
    cmd = [lora_python(), "-c", code]
    done = procs.run(cmd, cwd=PACK_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    chosen, seconds = json.loads(done.stdout.strip().splitlines()[-1])
    assert chosen == "float32" and seconds["bf16"] > 2 * seconds["float32"], seconds
