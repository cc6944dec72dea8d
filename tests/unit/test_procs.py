"""No process outlives its run: a child is started in its own process group and the whole group
is ended on a timeout, an interrupt or a failure (``mangaka/procs.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mangaka import procs
from mangaka.errors import MangakaError
from mangaka.paths import PACK_ROOT

# A stand-in for lora/measure.py whose variant hangs: it runs a variant the way measure.py does
# (procs.run, its own process group, SIGTERM turned into an interrupt), and beside it a helper in
# its own group that ignores SIGTERM (only SIGKILL ends it). Each writes "pid pgid" to OUT.
HANGING_PART = textwrap.dedent(
    """
    import os, subprocess, sys, time
    sys.path.insert(0, {root!r})
    from mangaka import procs
    out = {out!r}

    def note(name):
        with open(os.path.join(out, name), "w") as f:
            f.write(f"{{os.getpid()}} {{os.getpgid(0)}}")

    note("part")
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + (
        "open({{!r}}, 'w').write(f'{{{{__import__(\\"os\\").getpid()}}}} "
        "{{{{__import__(\\"os\\").getpgid(0)}}}}'); time.sleep(3600)".format(os.path.join(out, "stubborn"))
    )
    subprocess.Popen([sys.executable, "-c", stubborn])
    variant = (
        "import os, time; open({{!r}}, 'w').write(f'{{{{os.getpid()}}}} {{{{os.getpgid(0)}}}}'); "
        "time.sleep(3600)".format(os.path.join(out, "variant"))
    )
    with procs.terminate_as_interrupt():
        procs.run([sys.executable, "-c", variant])
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for(paths: list[Path], seconds: float = 60, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + seconds
    while not all(p.is_file() and p.read_text().strip() for p in paths):
        assert time.monotonic() < deadline, f"the hanging part did not start: {paths}"
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"exited {proc.returncode} before starting it: {proc.communicate()}")
        time.sleep(0.05)


def test_a_bench_part_whose_child_hangs_is_ended_whole_when_its_timeout_fires(tmp_path, monkeypatch):
    from mangaka.devtools.bench import training

    script = tmp_path / "hanging_measure.py"
    script.write_text(HANGING_PART.format(root=str(PACK_ROOT), out=str(tmp_path)))
    names = [tmp_path / n for n in ("part", "variant", "stubborn")]
    monkeypatch.setattr(training, "SCRIPT", script)
    monkeypatch.setattr(training, "lora_python", lambda: Path(sys.executable))
    monkeypatch.setattr(training, "TIMEOUT", 8.0)  # time enough for three Pythons to start
    with pytest.raises(MangakaError, match="did not finish in"):
        training.lora_train(quick=True)
    _wait_for(names, 0)  # all three had started before the timeout fired
    found = {p.name: tuple(map(int, p.read_text().split())) for p in names}
    part_pid, part_group = found["part"]
    variant_pid, variant_group = found["variant"]
    assert part_group == part_pid and variant_group == variant_pid != part_group  # each its own group
    assert found["stubborn"][1] == part_group  # the same group as the part: only SIGKILL ends it
    left = {name: pid for name, (pid, _) in found.items() if _alive(pid)}
    assert not left, f"still running after the timeout: {left}"
    assert not procs.group_alive(part_group) and not procs.group_alive(variant_group)


def test_run_returns_like_subprocess_run_and_clears_what_the_child_left_in_its_group(tmp_path):
    leftover = tmp_path / "leftover"
    child = tmp_path / "child.py"
    child.write_text(
        f"import os, time\nopen({str(leftover)!r}, 'w').write(str(os.getpid()))\ntime.sleep(3600)\n"
    )
    script = tmp_path / "leaves_a_child.py"
    script.write_text(
        "import subprocess, sys\n"
        "print('out'); print('err', file=sys.stderr)\n"
        f"subprocess.Popen([sys.executable, {str(child)!r}])  # in the same group, never waited for\n"
        "sys.exit(3)\n"
    )
    done = procs.run([sys.executable, str(script)], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    deadline = time.monotonic() + 30
    while not leftover.is_file() or not leftover.read_text():  # it may start after its parent left
        assert time.monotonic() < deadline
        time.sleep(0.05)
    pid = int(leftover.read_text())
    deadline = time.monotonic() + 30
    while _alive(pid):
        assert time.monotonic() < deadline, "the child's own child outlived the run"
        time.sleep(0.05)
    with pytest.raises(subprocess.CalledProcessError):
        procs.run([sys.executable, "-c", "raise SystemExit(2)"], check=True)


def test_a_timeout_raises_with_what_was_printed_and_ends_the_group():
    code = "import sys, time; print('begun', flush=True); time.sleep(3600)"
    with pytest.raises(subprocess.TimeoutExpired) as caught:
        procs.run([sys.executable, "-u", "-c", code], capture_output=True, text=True, timeout=2)
    assert "begun" in caught.value.output


def test_python_m_mangaka_ends_its_run_on_sigterm_like_ctrl_c(tmp_path):
    """SIGTERM to the CLI (a killed queue, a container stop) is an interrupt: one line, exit 130,
    and the children it started are ended with it."""
    env = {**os.environ, "PYTHONPATH": str(PACK_ROOT)}
    proc = procs.popen(
        [sys.executable, "-m", "mangaka", "bench", "--only", "lora_train", "--json"],
        cwd=tmp_path, env={**env, "MANGAKA_LORA_PYTHON": str(_sleeper(tmp_path))},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        marker = tmp_path / "sleeper.pid"
        _wait_for([marker], proc=proc)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        procs.end_group(proc)
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err
    pid = int(marker.read_text())
    deadline = time.monotonic() + 30
    while _alive(pid):
        assert time.monotonic() < deadline, "the bench's child outlived the interrupted bench"
        time.sleep(0.05)
    assert out == ""  # no half-written figures


def _sleeper(tmp_path: Path) -> Path:
    """An executable standing in for the LoRA Python: notes its pid, then sleeps."""
    path = tmp_path / "fake-lora-python"
    path.write_text(
        f"#!{sys.executable}\nimport os, time\nopen({str(tmp_path / 'sleeper.pid')!r}, 'w')"
        ".write(str(os.getpid()))\ntime.sleep(3600)\n"
    )
    path.chmod(0o755)
    return path
