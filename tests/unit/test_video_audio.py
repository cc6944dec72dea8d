"""Voice clips and the mix of a motion comic (``mangaka/video/audio.py``): real files written here
(WAV with ``wave``, FLAC through PyAV), decoded by real PyAV; no mocks."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import struct
import time
import tracemalloc
import wave
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
import pytest

from mangaka.errors import InputError
from mangaka.video.audio import (
    SAMPLE_RATE,
    Clip,
    Mix,
    clip_from_file,
    clip_from_waveform,
    clips_from_folder,
    clips_in_order,
)

LINES = ["d1", "d2", "d3"]


def tone(freq: float, seconds: float, rate: int, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return amp * np.sin(2 * np.pi * freq * t)


def write_wav(path: Path, channels: list[np.ndarray], rate: int) -> Path:
    """16-bit PCM; ``channels``: float arrays of one length, -1..1."""
    data = np.stack(channels, axis=1) if channels else np.zeros((0, 1))
    with wave.open(str(path), "wb") as w:
        w.setnchannels(max(1, len(channels)))
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((data * 32767).round().astype("<i2").tobytes())
    return path


def write_encoded(path: Path, x: np.ndarray, rate: int, fmt: str, codec: str) -> Path:
    """``x`` (mono float) encoded with PyAV, or the test skipped when the encoder is missing."""
    if codec not in av.codecs_available:
        pytest.skip(f"this FFmpeg has no {codec} encoder")
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate)
        stream.layout = "mono"
        fmt_name = stream.codec_context.codec.audio_formats[0].name
        resampler = av.AudioResampler(format=fmt_name, layout="mono", rate=rate)
        frames = []
        for i in range(0, len(x), 1024):
            frame = av.AudioFrame.from_ndarray(
                x[i : i + 1024].astype(np.float32).reshape(1, -1), format="flt", layout="mono"
            )
            frame.sample_rate = rate
            frame.pts = i  # the ogg muxer needs timestamps
            frames += resampler.resample(frame)
        for frame in [*frames, *resampler.resample(None), None]:
            for packet in stream.encode(frame):
                out.mux(packet)
    return path


def dominant(samples: np.ndarray, rate: int = SAMPLE_RATE) -> float:
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.argmax(spectrum) * rate / len(samples))


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (a FIFO opened for reading waits for a writer)."""

    def expired(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# --- files -----------------------------------------------------------------------------------------


def test_a_mono_wav_at_22050_keeps_its_length_and_pitch(tmp_path):
    path = write_wav(tmp_path / "d1.wav", [tone(440, 1.5, 22050)], 22050)
    clip = clip_from_file(path, "voice clip for line d1")
    assert clip.samples.dtype == np.float32 and clip.samples.ndim == 1
    assert abs(clip.seconds - 1.5) <= 0.001
    assert abs(dominant(clip.samples) - 440) < 2
    assert 0.48 < np.abs(clip.samples).max() < 0.52


def test_a_stereo_wav_at_44100_is_averaged_to_mono(tmp_path):
    left, right = tone(440, 1.0, 44100, 0.6), tone(1000, 1.0, 44100, 0.2)
    clip = clip_from_file(write_wav(tmp_path / "d2.wav", [left, right], 44100), "clip")
    assert abs(clip.seconds - 1.0) <= 0.001
    spectrum = np.abs(np.fft.rfft(clip.samples[:SAMPLE_RATE])) * 2 / SAMPLE_RATE
    assert spectrum[440] == pytest.approx(0.3, abs=0.01)  # 1 Hz bins over one second
    assert spectrum[1000] == pytest.approx(0.1, abs=0.01)
    same = clip_from_file(write_wav(tmp_path / "d3.wav", [left, left], 44100), "clip")
    assert np.abs(same.samples).max() == pytest.approx(0.6, abs=0.01)  # no +3 dB from the downmix


def test_a_flac_file_decodes_like_its_wav(tmp_path):
    path = write_encoded(tmp_path / "d1.flac", tone(660, 2.0, 44100), 44100, "flac", "flac")
    clip = clip_from_file(path, "clip")
    assert abs(clip.seconds - 2.0) <= 0.001
    assert abs(dominant(clip.samples) - 660) < 2


def test_an_empty_wav_is_refused(tmp_path):
    path = write_wav(tmp_path / "d1.wav", [], 22050)
    with pytest.raises(InputError, match=r"voice clip for line d1 .*d1\.wav is empty"):
        clip_from_file(path, "voice clip for line d1")


def test_a_wav_header_claiming_ten_hours_makes_no_ten_hour_clip(tmp_path):
    """FFmpeg bounds a WAV's data by the file's size: the few real frames are all that is read
    (or the file is refused); nothing waits for or allocates ten hours."""
    path = write_wav(tmp_path / "d1.wav", [tone(440, 0.5, 22050)], 22050)
    data = bytearray(path.read_bytes())
    claimed = 10 * 3600 * 22050 * 2
    data[4:8] = struct.pack("<I", claimed + 36)
    data[40:44] = struct.pack("<I", claimed)
    path.write_bytes(bytes(data))
    began = time.monotonic()
    try:
        clip = clip_from_file(path, "clip")
    except InputError as exc:
        assert "s long" in str(exc)
    else:
        assert clip.seconds == pytest.approx(0.5, abs=0.001)
    assert time.monotonic() - began < 5


def _ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc ^= byte << 24
        for _ in range(8):
            crc = ((crc << 1) ^ 0x04C11DB7 if crc & 0x80000000 else crc << 1) & 0xFFFFFFFF
    return crc


def test_a_file_whose_header_understates_is_refused_while_decoding(tmp_path):
    """An Ogg whose last page claims 0.1 s (the length FFmpeg reports) but that holds 3 s."""
    path = write_encoded(tmp_path / "d1.ogg", tone(440, 3.0, 44100), 44100, "ogg", "flac")
    data = bytearray(path.read_bytes())
    last = data.rfind(b"OggS")
    data[last + 6 : last + 14] = struct.pack("<q", 4410)  # the granule position: 0.1 s
    data[last + 22 : last + 26] = b"\0\0\0\0"
    data[last + 22 : last + 26] = struct.pack("<I", _ogg_crc(bytes(data[last:])))
    path.write_bytes(bytes(data))
    with av.open(str(path)) as container:
        assert container.duration < 200_000  # the lie is what FFmpeg declares
    with pytest.raises(InputError, match=r"d1\.ogg runs past 1 s \(found while decoding it"):
        clip_from_file(path, "clip", limit=1.0)
    assert clip_from_file(path, "clip", limit=5.0).seconds == pytest.approx(3.0, abs=0.001)


def test_a_file_declared_too_long_is_refused_before_decoding(tmp_path):
    path = write_wav(tmp_path / "d1.wav", [np.zeros(121 * 8000)], 8000)
    with pytest.raises(InputError, match=r"d1\.wav is 121\.0 s long by its header, more than the 120 s"):
        clip_from_file(path, "voice clip for line d1")
    with pytest.raises(InputError, match="more than the 60 s"):
        clip_from_file(path, "music", limit=60.0)


def test_a_text_file_is_not_audio(tmp_path):
    path = tmp_path / "d1.wav"
    path.write_text("Hello, this is not a recording.\n" * 20)
    with pytest.raises(InputError, match=r"voice clip for line d1 .*d1\.wav is not audio PyAV can read"):
        clip_from_file(path, "voice clip for line d1")
    with pytest.raises(InputError, match="is not audio PyAV can read"):
        clips_from_folder(tmp_path, LINES)


def test_a_missing_file_and_a_folder_are_refused(tmp_path):
    with pytest.raises(InputError, match="not found"):
        clip_from_file(tmp_path / "nope.wav", "music")
    with pytest.raises(InputError, match="is a folder"):
        clip_from_file(tmp_path, "music")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_named_like_a_clip_is_refused_without_waiting(tmp_path):
    os.mkfifo(tmp_path / "d1.wav")
    with deadline(10), pytest.raises(InputError, match="FIFO"):
        clips_from_folder(tmp_path, LINES)
    with deadline(10), pytest.raises(InputError, match="FIFO"):
        clip_from_file(tmp_path / "d1.wav", "clip")


# --- folders ---------------------------------------------------------------------------------------


def test_a_folder_gives_each_line_its_clip_and_ignores_other_files(tmp_path, caplog):
    write_wav(tmp_path / "d1.wav", [tone(440, 1.0, 22050)], 22050)
    write_encoded(tmp_path / "D2.FLAC", tone(880, 0.5, 44100), 44100, "flac", "flac")
    (tmp_path / "notes.txt").write_text("take 3 was best")
    (tmp_path / "cover.png").write_bytes(b"\x89PNG\r\n")
    write_wav(tmp_path / "theme.wav", [tone(220, 0.2, 22050)], 22050)
    with caplog.at_level(logging.WARNING):
        clips = clips_from_folder(tmp_path, LINES)
    assert list(clips) == ["d1", "d2"]
    assert clips["d1"].seconds == pytest.approx(1.0, abs=0.001)
    assert abs(dominant(clips["d2"].samples) - 880) < 3
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "d3" in warnings[0] and "d1" not in warnings[0]


def test_a_missing_folder_or_a_file_names_voices(tmp_path):
    with pytest.raises(InputError, match=r"--voices folder .*nope not found") as err:
        clips_from_folder(tmp_path / "nope", LINES)
    assert err.value.field == "voices"
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InputError, match=r"--voices .*a\.txt is not a folder"):
        clips_from_folder(tmp_path / "a.txt", LINES)


def test_clips_for_unknown_lines_are_refused(tmp_path):
    write_wav(tmp_path / "d1.wav", [tone(440, 0.2, 22050)], 22050)
    (tmp_path / "d99.wav").write_bytes(b"")
    (tmp_path / "d7.mp3").write_bytes(b"")
    with pytest.raises(InputError, match=r"does not have: d7\.mp3, d99\.wav; its lines are d1, d2, d3"):
        clips_from_folder(tmp_path, LINES)
    with pytest.raises(InputError, match="its lines are d1 … d5"):
        clips_from_folder(tmp_path, ["d1", "d2", "d3", "d4", "d5"])


def test_two_clips_for_one_line_are_refused(tmp_path):
    write_wav(tmp_path / "d1.wav", [tone(440, 0.2, 22050)], 22050)
    (tmp_path / "d1.mp3").write_bytes(b"")
    with pytest.raises(InputError, match=r"two clips for one line: d1\.mp3, d1\.wav"):
        clips_from_folder(tmp_path, LINES)


def test_a_folder_without_clips_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InputError, match=r"holds no clips named by line id \(d1\.wav …\)"):
        clips_from_folder(tmp_path, LINES)


# --- waveforms -------------------------------------------------------------------------------------


def test_a_waveform_is_resampled_and_downmixed():
    rate = 24000
    stereo = np.stack([tone(440, 1.25, rate, 0.4), tone(440, 1.25, rate, 0.4)]).astype(np.float32)
    clip = clip_from_waveform(stereo[None], rate, "audio clip 1 (line d1)")
    assert abs(clip.seconds - 1.25) <= 0.001
    assert abs(dominant(clip.samples) - 440) < 2
    assert np.abs(clip.samples).max() == pytest.approx(0.4, abs=0.01)
    same_rate = clip_from_waveform(tone(300, 0.5, SAMPLE_RATE), SAMPLE_RATE, "clip")
    assert same_rate.samples.dtype == np.float32 and len(same_rate.samples) == SAMPLE_RATE // 2


def test_int16_samples_are_scaled_to_one():
    ints = (tone(440, 0.5, 22050) * 32768).astype(np.int16)  # amplitude 0.5 of full scale
    clip = clip_from_waveform(ints, 22050, "clip")
    assert np.abs(clip.samples).max() == pytest.approx(0.5, abs=0.01)
    unsigned = ((tone(440, 0.5, 22050) + 1) * 128).clip(0, 255).astype(np.uint8)
    assert np.abs(clip_from_waveform(unsigned, 22050, "clip").samples).max() == pytest.approx(0.5, abs=0.02)


def test_a_ten_hour_waveform_is_refused_by_its_shape_alone():
    huge = np.broadcast_to(np.float32(0.1), (1, 2, 10 * 3600 * SAMPLE_RATE))  # no memory behind it
    tracemalloc.start()
    try:
        with pytest.raises(
            InputError, match=r"audio clip 3 \(line d3\) is 36000\.0 s long, more than the 120 s"
        ):
            clip_from_waveform(huge, SAMPLE_RATE, "audio clip 3 (line d3)")
        assert tracemalloc.get_traced_memory()[1] < 1_000_000
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("waveform", "rate", "message"),
    [
        (np.zeros((2, 1, 1000), np.float32), 48000, "batch of 2 clips"),
        (
            np.array([0.0, np.nan, 0.0] * 100, np.float32),
            48000,
            r"NaN or infinite samples \(the first at sample 1\)",
        ),
        (np.array([0.0, np.inf] * 100), 22050, "NaN or infinite"),
        (np.zeros((1, 2, 0), np.float32), 48000, "is empty"),
        (np.zeros((1000, 2), np.float32), 48000, "1000 channels of 2 samples"),
        (np.zeros(1000, bool), 48000, "holds bool values"),
        (np.zeros(1000, np.float32), 500, "outside 1000–384000 Hz"),
        (np.zeros(1000, np.float32), 44100.0, "not a whole number"),
    ],
)
def test_unusable_waveforms_are_refused(waveform, rate, message):
    with pytest.raises(InputError, match=rf"^audio clip 2 \(line d2\).*{message}"):
        clip_from_waveform(waveform, rate, "audio clip 2 (line d2)")


def test_clips_in_order_gives_one_clip_per_line():
    waves = [(tone(440, 0.5, 22050), 22050), (tone(440, 0.25, 44100), 44100)]
    clips = clips_in_order(waves, ["d1", "d2"])
    assert list(clips) == ["d1", "d2"]
    assert clips["d2"].seconds == pytest.approx(0.25, abs=0.001)
    with pytest.raises(
        InputError,
        match=r"^2 audio clips for 5 lines \(d1 … d5\); give one clip per line, in dialogue order$",
    ):
        clips_in_order(waves, ["d1", "d2", "d3", "d4", "d5"])
    with pytest.raises(InputError, match=r"audio clip 2 \(line d2\) is empty"):
        clips_in_order([waves[0], (np.zeros(0), 22050)], ["d1", "d2"])


# --- the mix ---------------------------------------------------------------------------------------


def _clip(x: np.ndarray) -> Clip:
    return Clip(np.asarray(x, dtype=np.float32))


def test_the_mix_has_exactly_its_samples_and_places_a_clip_at_its_start():
    voice = _clip(tone(440, 0.5, SAMPLE_RATE))
    mix = Mix([(1.0, voice)], duration=2.50001)
    assert mix.samples == 120000
    chunks = list(mix.chunks(1000))
    assert [len(c) for c in chunks[-2:]] == [1000, 1000] and len(chunks) == 120
    odd = list(mix.chunks(7000))
    assert len(odd[-1]) == 120000 % 7000 and all(c.dtype == np.float32 for c in odd)
    track = np.concatenate(odd)
    assert len(track) == mix.samples
    assert not track[:SAMPLE_RATE].any()
    assert track[SAMPLE_RATE + 1] != 0 and not track[SAMPLE_RATE + 24000 :].any()
    np.testing.assert_array_equal(track[SAMPLE_RATE : SAMPLE_RATE + 24000], voice.samples)


def test_overlapping_voices_add_and_the_sum_is_clipped():
    loud = _clip(np.full(SAMPLE_RATE, 0.7))
    track = np.concatenate(list(Mix([(0.0, loud), (0.5, loud)], duration=2.0).chunks()))
    assert track[1000] == pytest.approx(0.7) and track[SAMPLE_RATE - 10] == 1.0
    assert track[SAMPLE_RATE + 10] == pytest.approx(0.7) and not track[72000:].any()


def test_music_loops_to_fill_the_video():
    music = _clip(tone(500, 1.0, SAMPLE_RATE, 0.8))
    track = np.concatenate(list(Mix([], duration=3.5, music=music, music_volume=0.5).chunks()))
    expected = 0.5 * np.resize(music.samples, len(track))
    np.testing.assert_allclose(track, expected, atol=1e-6)


def test_music_is_ducked_to_a_third_under_a_voice():
    music = _clip(tone(500, 1.0, SAMPLE_RATE, 0.6))
    quiet = _clip(np.zeros(2 * SAMPLE_RATE))  # a placed clip ducks the music, whatever it holds
    track = np.concatenate(list(Mix([(4.0, quiet)], duration=9.0, music=music, music_volume=0.35).chunks()))
    s = SAMPLE_RATE
    alone, under = rms(track[: int(3.5 * s)]), rms(track[4 * s : 6 * s])
    assert alone == pytest.approx(0.35 * 0.6 / np.sqrt(2), rel=0.01)
    assert alone / under == pytest.approx(3.0, rel=0.02)
    assert rms(track[int(6.5 * s) :]) == pytest.approx(alone, rel=0.01)  # back up after the ramp
    ramp_in = rms(track[int(3.8 * s) : int(3.85 * s)])
    assert under < ramp_in < alone


def test_a_clip_past_the_end_is_refused_and_bad_levels_too():
    clip = _clip(np.zeros(SAMPLE_RATE))
    with pytest.raises(
        InputError, match=r"voice clip at 1\.500 s \(1\.000 s long\) runs past the video's end at 2\.000 s"
    ):
        Mix([(1.5, clip)], duration=2.0)
    assert Mix([(1.0005, clip)], duration=2.0).samples == 96000  # the timeline's rounding is cut
    with pytest.raises(InputError, match=r"music_volume is 1\.5") as err:
        Mix([], duration=2.0, music=clip, music_volume=1.5)
    assert err.value.field == "music_volume"
    with pytest.raises(InputError, match="start -1"):
        Mix([(-1, clip)], duration=2.0)


def test_iterating_ten_minutes_with_music_stays_small():
    s = SAMPLE_RATE
    music = _clip(tone(300, 30.0, s, 0.5))
    voices = [(t, _clip(tone(440, 2.0, s, 0.3))) for t in range(5, 590, 13)]
    mix = Mix(voices, duration=600.0, music=music)
    tracemalloc.start()
    try:
        total = sum(len(c) for c in mix.chunks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == 600 * s
    assert peak < 20 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while mixing"


def test_a_video_longer_than_the_music_limit_is_mixed_and_one_past_the_timelines_is_refused():
    """The mix is bounded by the timeline's longest video, not by the music's 15-minute limit: a
    20-minute chapter is taken (its music is looped), a 5-hour one is refused naming its length."""
    from mangaka.video.audio import MAX_MUSIC_SECONDS
    from mangaka.video.timeline import MAX_DURATION

    assert MAX_MUSIC_SECONDS < 20 * 60 < MAX_DURATION
    assert Mix([], duration=20 * 60.0).samples == 20 * 60 * 48000
    with pytest.raises(InputError, match="18000 s is over 14400 s"):
        Mix([], duration=5 * 3600.0)
