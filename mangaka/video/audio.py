"""A motion comic's sound: voice clips read and checked, placed on the timeline and mixed with
optional music, as a stream of chunks the renderer encodes.

Where clips come from: ComfyUI AUDIO inputs (``clips_in_order``: one per line, in dialogue
order; ``clip_from_waveform`` each) or, on the command line, a folder of audio files named by line
id (``clips_from_folder``: ``d1.wav``, ``d2.mp3``, …; ``clip_from_file`` each, any file PyAV
decodes). Every clip comes out mono, float32, at ``SAMPLE_RATE``: channels are averaged (the same
downmix for both ways in, which keeps a stereo file whose two sides are the same at its level) and
the rate is converted by FFmpeg's resampler (``av.AudioResampler``, deterministic, anti-aliased).

Length is bounded before anything large is made: a waveform by its shape, a file by the length its
header declares and again while it is decoded (a header may understate), so a 10-hour clip given
by mistake is refused rather than decoded.

``Mix`` places the clips at their cue's start over silence, adds the music looped to fill the video
at ``music_volume``, ducked to a third of it while any voice clip is placed (0.25 s linear ramps,
the duck reached as the voice starts), and yields chunks computed on demand: memory holds the
clips, never the mixed track. Overlapping voices add; the sum is hard-clipped to [-1, 1].
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..fileio import MAX_INPUT_BYTES, check_input_file, file_kind
from .timeline import MAX_DURATION

log = logging.getLogger(__name__)

SAMPLE_RATE = 48000  # the output's rate; mono
MAX_CLIP_SECONDS = 120.0  # a voice line longer than this is a mistake (a whole chapter's recording)
MAX_MUSIC_SECONDS = 15 * 60.0  # a looped background track; decoded whole (about 170 MB at the limit)
MIN_RATE, MAX_RATE = 1000, 384000  # the sample rates a waveform may have
MAX_CHANNELS = 64  # more is a [samples, channels] array given the wrong way round
AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".aac")
DUCK = 1 / 3  # the music's level under a voice, relative to music_volume
DUCK_RAMP = 0.25  # seconds the music takes to go down to the duck and back up
# A file is refused by size only when no audio could be that large for its length: 192 kHz
# stereo float32 is 1.5 MB a second (the decoded length is what really bounds a clip).
_BYTES_PER_SECOND = 192000 * 2 * 4
_BLOCK = 1 << 16  # samples a waveform is converted in at a time
_EDGE = 0.001  # seconds a clip may run past the video's end (the timeline's rounding) and be cut


@dataclass(frozen=True)
class Clip:
    """One sound: mono float32 samples at ``SAMPLE_RATE``."""

    samples: Any  # numpy float32, mono, SAMPLE_RATE

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE


def _too_long(what: str, seconds: float, limit: float, how: str = "") -> InputError:
    return InputError(
        f"{what} is {seconds:.1f} s long{how}, more than the {limit:g} s Mangaka takes for it; "
        "give only the sound meant for it (cut it shorter)"
    )


class _Collector:
    """Frames in (any rate and layout), one mono float32 ``SAMPLE_RATE`` clip out; refuses the
    clip as soon as what came in passes ``limit`` seconds."""

    def __init__(self, what: str, limit: float) -> None:
        import av  # PyAV: heavy, loaded only where audio is decoded

        self.what = what
        self.limit = limit
        self.seconds = 0.0
        self.parts: list[Any] = []
        self._av = av
        self._resampler = av.AudioResampler(format="fltp", rate=SAMPLE_RATE)

    def add_frame(self, frame: Any) -> None:
        self.seconds += frame.samples / frame.sample_rate
        if self.seconds > self.limit:
            raise InputError(
                f"{self.what} runs past {self.limit:g} s (found while decoding it: its header says "
                f"less), more than the {self.limit:g} s Mangaka takes for it; give only the sound "
                "meant for it (cut it shorter)"
            )
        try:
            out = self._resampler.resample(frame)
        except ValueError as exc:  # the stream changed its format or channels midway
            raise InputError(
                f"{self.what} changes its sample format or channels partway ({exc}); "
                "convert it to a plain WAV file and give that"
            ) from None
        self._keep(out)

    def add_mono(self, mono: Any, rate: int) -> None:
        """``mono``: float32 samples at ``rate``."""
        if rate == SAMPLE_RATE:
            self.seconds += len(mono) / rate
            self.parts.append(mono)
            return
        frame = self._av.AudioFrame.from_ndarray(mono.reshape(1, -1), format="fltp", layout="mono")
        frame.sample_rate = rate
        self.add_frame(frame)

    def _keep(self, frames: list[Any]) -> None:
        import numpy as np  # numpy: heavy, loaded only where audio is handled

        for out in frames:
            planes = out.to_ndarray()  # [channels, samples], fltp
            self.parts.append(planes[0].copy() if len(planes) == 1 else planes.mean(axis=0, dtype=np.float32))

    def clip(self) -> Clip:
        import numpy as np  # numpy: heavy, loaded only where audio is handled

        self._keep(self._resampler.resample(None))  # the resampler's last samples (none if unused)
        samples = np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.float32)
        if not len(samples):
            raise InputError(f"{self.what} is empty (no sound in it); give a clip with the line's sound")
        if not np.isfinite(samples).all():
            raise InputError(f"{self.what} holds NaN or infinite samples; give a clip of real sound")
        return Clip(samples.astype(np.float32, copy=False))


def _check_rate(sample_rate: Any, what: str) -> int:
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Integral):
        raise InputError(f"{what}'s sample rate {sample_rate!r} is not a whole number of samples a second")
    if not MIN_RATE <= sample_rate <= MAX_RATE:
        raise InputError(
            f"{what}'s sample rate {sample_rate} is outside {MIN_RATE}–{MAX_RATE} Hz; "
            "give the clip with its real sample rate"
        )
    return int(sample_rate)


def _planes(array: Any, what: str) -> Any:
    """``array`` as [channels, samples] (a view: nothing is copied)."""
    if array.ndim == 3:
        if array.shape[0] != 1:
            raise InputError(
                f"{what} is a batch of {array.shape[0]} clips; give one clip per line (batch size 1)"
            )
        array = array[0]
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2:
        raise InputError(
            f"{what} has shape {tuple(array.shape)}; give [samples], [channels, samples] or "
            "[1, channels, samples] (ComfyUI AUDIO)"
        )
    if array.shape[0] > MAX_CHANNELS:
        raise InputError(
            f"{what} has {array.shape[0]} channels of {array.shape[1]} samples; give it as "
            "[channels, samples] (transpose a [samples, channels] array)"
        )
    return array


def _scale(dtype: Any, what: str) -> tuple[float, float]:
    """(offset, full scale) that bring samples of ``dtype`` to -1..1."""
    import numpy as np  # numpy: heavy, loaded only where audio is handled

    if dtype.kind == "f":
        return 0.0, 1.0
    if dtype.kind == "i":
        return 0.0, float(2 ** (8 * dtype.itemsize - 1))
    if dtype.kind == "u":
        half = float(2 ** (8 * dtype.itemsize - 1))
        return half, half
    raise InputError(f"{what} holds {np.dtype(dtype).name} values; give float or integer samples")


def clip_from_waveform(waveform: Any, sample_rate: int, what: str, limit: float = MAX_CLIP_SECONDS) -> Clip:
    """``waveform`` (a numpy array: [samples], [channels, samples] or [1, channels, samples];
    float in -1..1 or integer samples) at ``sample_rate`` as a ``Clip``; ``InputError`` naming
    ``what`` when it is empty, longer than ``limit`` seconds (known from its shape, before anything
    is converted), not finite, or not audio-shaped."""
    import numpy as np  # numpy: heavy, loaded only where audio is handled

    rate = _check_rate(sample_rate, what)
    array = np.asarray(waveform)  # an array (a broadcast view too) stays as it is: no copy
    if array.ndim not in (1, 2, 3):
        raise InputError(f"{what} has {array.ndim} dimensions; give [batch, channels, samples] audio")
    planes = _planes(array, what)
    channels, count = planes.shape
    if not channels or not count:
        raise InputError(f"{what} is empty (no samples); give a clip with the line's sound")
    if count / rate > limit:
        raise _too_long(what, count / rate, limit)
    offset, full = _scale(planes.dtype, what)
    collector = _Collector(what, limit)
    for start in range(0, count, _BLOCK):
        part = planes[:, start : start + _BLOCK]
        if offset or full != 1.0:
            part = (part.astype(np.float64) - offset) / full
        part = part.astype(np.float32)  # a copy: the caller's array is never changed
        if not np.isfinite(part).all():
            bad = start + int(np.argwhere(~np.isfinite(part))[0][1])
            raise InputError(
                f"{what} holds NaN or infinite samples (the first at sample {bad}); give a clip of real sound"
            )
        mono = part[0] if channels == 1 else part.mean(axis=0, dtype=np.float32)
        collector.add_mono(np.ascontiguousarray(mono), rate)
    return collector.clip()


def _open_regular(path: Path, what: str) -> IO[bytes]:
    """``path`` opened for reading without blocking: a FIFO swapped in after the check is still
    refused instead of waiting for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    fh = os.fdopen(fd, "rb")
    kind = file_kind(os.fstat(fh.fileno()).st_mode)
    if kind != "file":
        fh.close()
        raise InputError(f"{what} {path} is a {kind}, not a regular file; give an audio file")
    return fh


def _declared_seconds(container: Any, stream: Any) -> float | None:
    """The length the file's header gives (the longest of the container's and the stream's), or
    None when it gives none."""
    known = []
    if container.duration is not None and container.duration > 0:
        known.append(container.duration / 1_000_000)  # AV_TIME_BASE: microseconds
    if stream.duration is not None and stream.time_base is not None and stream.duration > 0:
        known.append(float(stream.duration * stream.time_base))
    return max(known) if known else None


def clip_from_file(path: Path, what: str, limit: float = MAX_CLIP_SECONDS) -> Clip:
    """The first audio stream of the file ``path`` (any format PyAV decodes: wav, flac, mp3, ogg,
    m4a, …) as a ``Clip``; ``InputError`` naming ``what`` and the file when it is not a regular file,
    not audio, empty, or longer than ``limit`` seconds (by its header, before decoding; and while
    decoding, as soon as it passes ``limit``)."""
    import av  # PyAV: heavy, loaded only where audio is decoded

    path = Path(path)
    named = f"{what} {path}"
    check_input_file(path, what, limit=max(MAX_INPUT_BYTES, int(limit * _BYTES_PER_SECOND)))
    with _open_regular(path, what) as fh:
        try:
            container = av.open(fh, mode="r")
        except (av.FFmpegError, OSError, ValueError) as exc:
            raise InputError(
                f"{named} is not audio PyAV can read ({exc}); give a WAV, FLAC, MP3, OGG or M4A file"
            ) from None
        with container:
            if not container.streams.audio:
                raise InputError(f"{named} has no audio stream; give an audio file (or a video with sound)")
            stream = container.streams.audio[0]
            declared = _declared_seconds(container, stream)
            if declared is not None and declared > limit:
                raise _too_long(named, declared, limit, " by its header")
            collector = _Collector(named, limit)
            try:
                for frame in container.decode(stream):
                    collector.add_frame(frame)
            except av.FFmpegError as exc:
                raise InputError(
                    f"{named} is damaged: decoding stopped at {collector.seconds:.2f} s ({exc}); "
                    "export it again or convert it to WAV"
                ) from None
            return collector.clip()


def _span(ids: Sequence[str]) -> str:
    if not ids:
        return "none"
    return ", ".join(ids) if len(ids) <= 3 else f"{ids[0]} … {ids[-1]}"


def _voices_error(detail: str) -> InputError:
    return InputError.about("voices", detail, "--voices")


def _audio_files(folder: Path, known: Sequence[str]) -> dict[str, list[str]]:
    """File names in ``folder`` by the line id their stem names (lowercase): audio suffixes only;
    stems shaped like a line id (a known id's letters, then digits) but not known are kept too,
    under their own stem, for the caller to refuse."""
    prefixes = {re.sub(r"[0-9]+$", "", i) for i in known} or {"d"}
    shaped = re.compile(rf"(?:{'|'.join(re.escape(p) for p in sorted(prefixes) if p)})[0-9]+")
    found: dict[str, list[str]] = {}
    for name in sorted(os.listdir(folder)):
        stem, dot, suffix = name.rpartition(".")
        if not dot or f".{suffix.lower()}" not in AUDIO_SUFFIXES:
            continue
        key = stem.lower()
        if key in known or shaped.fullmatch(key):
            found.setdefault(key, []).append(name)
    return found


def clips_from_folder(folder: Path, line_ids: Sequence[str]) -> dict[str, Clip]:
    """The voice clips in ``folder`` (the ``--voices`` folder), by line id, in ``line_ids``' order:
    each audio file whose stem is a line id (``d1.wav``, ``d2.MP3``; suffixes in
    ``AUDIO_SUFFIXES``, any case). Other files are ignored; a file named for a line the screenplay
    lacks, two files for one line, or no clip at all is an ``InputError``. A line without a clip is
    timed by its reading time (one warning names them)."""
    folder = Path(folder)
    if not folder.exists():
        raise _voices_error(f"folder {folder} not found; give the folder of voice clips (d1.wav, d2.wav, …)")
    if not folder.is_dir():
        raise _voices_error(f"{folder} is not a folder; give the folder holding the voice clips (d1.wav, …)")
    known = list(dict.fromkeys(line_ids))
    try:
        found = _audio_files(folder, known)
    except OSError as exc:
        raise _voices_error(f"folder {folder} cannot be read: {exc.strerror or exc}") from None
    unknown = sorted((k for k in found if k not in known), key=_natural)
    if unknown:
        names = ", ".join(n for k in unknown for n in found[k])
        raise _voices_error(
            f"folder {folder} holds clips for lines the screenplay does not have: {names}; "
            f"its lines are {_span(known)}: rename or remove those files"
        )
    twice = "; ".join(", ".join(found[k]) for k in known if len(found.get(k, ())) > 1)
    if twice:
        raise _voices_error(f"folder {folder} holds two clips for one line: {twice}; keep one of each")
    if not found:
        raise _voices_error(
            f"folder {folder} holds no clips named by line id (d1.wav …); name each clip by its line's "
            f"id ({_span(known)}) with one of {' '.join(AUDIO_SUFFIXES)}"
        )
    missing = [k for k in known if k not in found]
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        log.warning("No voice clip for line(s) %s: timed by reading", shown)
    return {k: clip_from_file(folder / found[k][0], f"voice clip for line {k}") for k in known if k in found}


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    return head, int(name[len(head) :] or 0)


def clips_in_order(waveforms: Sequence[tuple[Any, int]], line_ids: Sequence[str]) -> dict[str, Clip]:
    """ComfyUI's way in: one ``(waveform, sample_rate)`` per line, in dialogue order, each checked
    by ``clip_from_waveform`` (named "audio clip N (line dN)", N from 1)."""
    if len(waveforms) != len(line_ids):
        raise InputError(
            f"{len(waveforms)} audio clips for {len(line_ids)} lines ({_span(list(line_ids))}); "
            "give one clip per line, in dialogue order"
        )
    return {
        line: clip_from_waveform(waveform, rate, f"audio clip {i} (line {line})")
        for i, ((waveform, rate), line) in enumerate(zip(waveforms, line_ids, strict=True), 1)
    }


class Mix:
    """Voice clips placed at their start (seconds) over ``duration`` seconds of silence, with
    ``music`` looped under them at ``music_volume`` (ducked to a third of it while a voice clip is
    placed); ``chunks`` yields the mix computed on demand. A clip that runs past ``duration`` (by
    more than the timeline's rounding, 1 ms) is refused: the timeline always leaves it room."""

    def __init__(
        self,
        placed: Sequence[tuple[float, Clip]],
        duration: float,
        music: Clip | None = None,
        music_volume: float = 0.35,
    ) -> None:
        import numpy as np  # numpy: heavy, loaded only where audio is handled

        if not (_real(duration) and 0 < duration):
            raise InputError(f"the video's duration {duration!r} is not a positive number of seconds")
        if duration > MAX_DURATION:  # the timeline's own bound, not the music's
            raise InputError(f"the video's duration {duration:g} s is over {MAX_DURATION:g} s; split it")
        if not (_real(music_volume) and 0 <= music_volume <= 1):
            raise InputError.about("music_volume", f"is {music_volume!r}; give a level from 0 to 1")
        self.duration = float(duration)
        self.music_volume = float(music_volume)
        self._total = round(duration * SAMPLE_RATE)
        voices = []
        for start, clip in placed:
            samples = np.asarray(clip.samples, dtype=np.float32).reshape(-1)
            voices.append((self._offset(start, len(samples)), samples))
        voices.sort(key=lambda v: v[0])
        # a clip within the rounding past the end is cut there (one starting after it is dropped)
        self._voices = [(at, s[: self._total - at]) for at, s in voices if len(s) and at < self._total]
        music_samples = None if music is None else np.asarray(music.samples, dtype=np.float32).reshape(-1)
        self._music = music_samples if music_samples is not None and len(music_samples) else None
        self._ducks = _merged([(at, at + len(s)) for at, s in self._voices])

    def _offset(self, start: float, length: int) -> int:
        if not (_real(start) and start >= 0):
            raise InputError(f"a voice clip's start {start!r} is not a time in seconds from 0")
        at = round(start * SAMPLE_RATE)
        if at + length > self._total + round(_EDGE * SAMPLE_RATE):
            raise InputError(
                f"the voice clip at {start:.3f} s ({length / SAMPLE_RATE:.3f} s long) runs past the "
                f"video's end at {self.duration:.3f} s; the timeline and the clips disagree: build "
                "the timeline again from these clips"
            )
        return at

    @property
    def samples(self) -> int:
        """How many samples the mix has: ``round(duration * SAMPLE_RATE)``."""
        return self._total

    def chunks(self, size: int = 1024) -> Iterator[Any]:
        """The mix as float32 mono chunks of ``size`` samples (the last shorter), ``samples`` in all;
        each computed when asked for, from the clips that sound in it."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"chunk size must be a positive int, not {size!r}")
        return self._chunks(size)

    def _chunks(self, size: int) -> Iterator[Any]:
        import numpy as np  # numpy: heavy, loaded only where audio is handled

        following = 0  # the next voice (by start) not yet sounding
        sounding: list[tuple[int, Any]] = []
        duck_from = 0  # the first duck interval whose ramp out has not ended
        for lo in range(0, self._total, size):
            hi = min(lo + size, self._total)
            out = np.zeros(hi - lo, dtype=np.float32)
            while following < len(self._voices) and self._voices[following][0] < hi:
                sounding.append(self._voices[following])
                following += 1
            sounding = [(at, s) for at, s in sounding if at + len(s) > lo]
            for at, s in sounding:
                a, b = max(lo, at), min(hi, at + len(s))
                out[a - lo : b - lo] += s[a - at : b - at]
            if self._music is not None and self.music_volume > 0:
                duck_from = self._add_music(out, lo, hi, duck_from)
            np.clip(out, -1.0, 1.0, out=out)  # a hard clip: loud overlaps are cut, not compressed
            yield out

    def _add_music(self, out: Any, lo: int, hi: int, duck_from: int) -> int:
        """Add the looped music to ``out`` (samples ``lo``..``hi``), ducked; the new ``duck_from``."""
        import numpy as np  # numpy: heavy, loaded only where audio is handled

        ramp = round(DUCK_RAMP * SAMPLE_RATE)
        ducks = self._ducks
        while duck_from < len(ducks) and ducks[duck_from][1] + ramp <= lo:
            duck_from += 1
        depth = np.zeros(hi - lo, dtype=np.float32)  # 1 where fully ducked, 0 where not
        t = np.arange(lo, hi, dtype=np.float64)
        i = duck_from
        while i < len(ducks) and ducks[i][0] - ramp < hi:
            start, end = ducks[i]
            here = np.clip(np.minimum(t - (start - ramp), (end + ramp) - t) / ramp, 0.0, 1.0)
            np.maximum(depth, here.astype(np.float32), out=depth)
            i += 1
        gain = self.music_volume * (1.0 - (1.0 - DUCK) * depth)
        music = np.take(self._music, np.arange(lo, hi), mode="wrap")
        out += music * gain
        return duck_from


def _real(value: Any) -> bool:
    """Whether ``value`` is a finite number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (sorted by start) with overlapping ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
