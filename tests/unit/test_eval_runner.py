"""The eval command's checks, summaries and comparison, without a model (tests/model/test_eval.py
runs it on the embedded model)."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest

from mangaka.cli.eval import _apply, _config, eval_report, format_report, select_cases
from mangaka.cli.eval import run as cmd_eval
from mangaka.cli.main import build_parser
from mangaka.errors import InputError
from mangaka.evaluate import BUILTIN_SET, load_gold_set
from mangaka.evaluate.runner import (
    FIGURES,
    EvalConfig,
    RunRecord,
    case_request,
    compare,
    fingerprint,
    summarise,
)
from mangaka.screenplay.request import ScreenplayRequest
from tests.unit.support import write_two_character_scene


def args_of(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["eval", *argv])


def record(config: str, chapter: str, seed: int, **scores) -> RunRecord:
    return RunRecord(config, chapter, seed, {name: scores.get(name) for name in FIGURES})


def test_the_builtin_set_has_its_chapters_in_each_language():
    """Three chapters in each of en, ja and zh (a fourth English one with signs, a headline and
    scare quotes), two in Korean and two in French (dash dialogue)."""
    cases = load_gold_set(BUILTIN_SET)
    counts = {"en": 4, "fr": 2, "ja": 3, "ko": 2, "zh": 3}
    assert sorted(c.id for c in cases) == [
        f"{lang}{n}" for lang, k in counts.items() for n in range(1, k + 1)
    ]
    for case in cases:
        assert case.gold.language == case.id[:2]
        assert 600 <= len(case.text) <= 4500, case.id


def test_chapters_are_chosen_by_id_and_an_unknown_one_is_named():
    name, cases = select_cases(args_of("gold", "--chapters", "zh2,en1,zh2"))
    assert [c.id for c in cases] == ["zh2", "en1"] and name == "gold"
    with pytest.raises(InputError, match=r"--chapters en9: en9 not in the set; its chapters are en1, "):
        select_cases(args_of("gold", "--chapters", "en9"))


def test_a_set_folder_that_is_not_a_gold_set_is_refused_naming_it(tmp_path):
    with pytest.raises(InputError, match=str(tmp_path)):
        select_cases(args_of(str(tmp_path)))
    shutil.copy(BUILTIN_SET / "en1.txt", tmp_path / "en1.txt")
    with pytest.raises(InputError, match="en1"):
        select_cases(args_of(str(tmp_path)))


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["thinking=4000"], r"--compare thinking=4000: give KEY=VALUE with KEY one of model, lora"),
        (["think"], r"--compare think: give KEY=VALUE"),
        (["think=lots"], r"--compare think=lots: 'lots' is not a whole number, which think takes"),
    ],
)
def test_a_bad_compare_setting_is_named(specs, message):
    with pytest.raises(InputError, match=message):
        _apply(args_of("gold", "--remote", "http://127.0.0.1:9"), specs)


def test_compare_changes_only_what_it_names():
    base = args_of("gold", "--remote", "http://127.0.0.1:9", "--think", "0")
    changed = _apply(base, ["think=4000", "prompt-language=zh", "lora=none"])
    assert (changed.think, changed.prompt_language, changed.lora) == (4000, "zh", None)
    assert (base.think, base.prompt_language) == (0, None) and changed.remote == base.remote
    a, b = _config("a", base), _config("b", changed)
    assert b.settings["think"] == 4000 and b.request.prompt_language == "zh"
    assert a.request.think_tokens == 0 and a.settings["prompt_language"] is None


def test_a_configuration_needs_a_model_or_a_server_and_valid_options(tmp_path):
    with pytest.raises(InputError, match=r"configuration a: give either --model FILE\.gguf or --remote URL"):
        _config("a", args_of("gold"))
    with pytest.raises(InputError, match="--panels must be from 1 to 240, got 999"):
        _config("a", args_of("gold", "--remote", "http://x", "--panels", "999"))
    with pytest.raises(InputError, match="--prompt-language"):
        _config("a", _apply(args_of("gold", "--remote", "http://x"), ["prompt_language=fr"]))
    with pytest.raises(Exception, match="not-a-model"):
        _config("a", args_of("gold", "--model", str(tmp_path / "not-a-model.gguf")))
    with pytest.raises(
        InputError, match=r"configuration b: jump_forward must be one of: off, exact, canonical; got 'fast'"
    ):
        _config("b", _apply(args_of("gold", "--remote", "http://x"), ["jump_forward=fast"]))
    assert (
        _config("b", _apply(args_of("gold", "--remote", "http://x"), ["jump-forward=off"])).settings[
            "jump_forward"
        ]
        == "off"
    )


def test_each_chapter_is_asked_for_its_references_counts_in_its_language():
    [case] = [c for c in load_gold_set(BUILTIN_SET) if c.id == "zh1"]
    reference = case.reference()
    config = EvalConfig("a", {}, ScreenplayRequest())
    request = case_request(config, case, seed=7)
    assert (request.language, request.seed) == ("zh", 7)
    assert (request.panels, request.dialogue) == (len(reference.panels), len(reference.dialogue))
    fixed = case_request(EvalConfig("a", {}, ScreenplayRequest(), panels=3, dialogue=0), case, 7)
    assert (fixed.panels, fixed.dialogue) == (3, 0)
    assert fingerprint(config, case, request) != fingerprint(config, case, fixed)


def test_a_chapter_without_a_reference_is_asked_for_the_given_counts_or_auto(tmp_path):
    write_two_character_scene(tmp_path, "scene")
    for suffix in (".txt", ".gold.json", ".reference.json"):
        shutil.copy(BUILTIN_SET / f"en1{suffix}", tmp_path / f"en1{suffix}")
    name, cases = select_cases(args_of(str(tmp_path)))
    assert name == str(tmp_path) and [c.id for c in cases] == ["en1", "scene"]
    en1, scene = cases
    assert scene.reference_path is None and en1.reference_path == tmp_path / "en1.reference.json"

    def counts(*argv: str) -> dict[str, tuple[int | str, int | str]]:
        config = _config("a", args_of(str(tmp_path), "--remote", "http://127.0.0.1:9", *argv))
        requests = {c.id: case_request(config, c, seed=3) for c in cases}
        assert {(r.language, r.seed) for r in requests.values()} == {("en", 3)}
        return {cid: (r.panels, r.dialogue) for cid, r in requests.items()}

    reference = en1.reference()
    en1_counts = (len(reference.panels), len(reference.dialogue))
    # No count given: the reference's where there is one, else auto (from the chapter).
    assert counts() == {"en1": en1_counts, "scene": ("auto", "auto")}
    assert counts("--panels", "4") == {"en1": (4, en1_counts[1]), "scene": (4, "auto")}
    assert counts("--dialogue", "0") == {"en1": (en1_counts[0], 0), "scene": ("auto", 0)}
    assert counts("--panels", "AUTO", "--dialogue", "2") == {"en1": ("auto", 2), "scene": ("auto", 2)}
    # A two-character cast is asked for at least as many characters as the configuration allows.
    config = EvalConfig("a", {}, ScreenplayRequest())
    assert case_request(config, scene, 0).max_characters == ScreenplayRequest().max_characters


def test_compare_turns_the_speaker_hints_off_and_names_a_bad_switch():
    base = args_of("gold", "--remote", "http://127.0.0.1:9")
    a, b = _config("a", base), _config("b", _apply(base, ["speaker_hints=off"]))
    assert (a.request.speaker_hints, b.request.speaker_hints) == (True, False)
    assert (a.settings["speaker_hints"], b.settings["speaker_hints"]) == (True, False)
    assert _config("c", _apply(base, ["speaker-hints=on"])).request.speaker_hints is True
    forced = _config("d", _apply(base, ["speaker_guesses=force"]))
    assert (a.settings["speaker_guesses"], forced.settings["speaker_guesses"]) == ("auto", "force")
    assert forced.request.speaker_guesses == "force"
    with pytest.raises(InputError, match=r"--compare speaker_hints=maybe: 'maybe' is not on or off"):
        _apply(base, ["speaker_hints=maybe"])


def test_compare_takes_auto_counts_and_names_a_bad_one():
    base = args_of("gold", "--remote", "http://127.0.0.1:9", "--panels", "3")
    b = _config("b", _apply(base, ["panels=auto", "dialogue=5"]))
    assert (b.panels, b.dialogue) == ("auto", 5) and b.settings["panels"] == "auto"
    with pytest.raises(InputError, match=r"--compare panels=many: 'many' is not a whole number or auto"):
        _apply(base, ["panels=many"])
    with pytest.raises(InputError, match=r"--panels must be from 1 to 240, got 0"):
        _config("b", _apply(base, ["panels=0"]))


def test_a_chapter_missing_its_gold_file_is_named_before_any_model(tmp_path):
    write_two_character_scene(tmp_path, "scene")
    (tmp_path / "scene.gold.json").unlink()
    with pytest.raises(InputError) as info:
        cmd_eval(args_of(str(tmp_path), "--remote", "http://127.0.0.1:9", "--out", str(tmp_path / "out")))
    message = str(info.value)
    assert f"{tmp_path / 'scene.gold.json'} is missing" in message
    assert "each chapter needs scene.txt (the chapter) and scene.gold.json (its gold file" in message
    assert not (tmp_path / "out").exists()


def test_a_broken_reference_is_named_before_any_model(tmp_path):
    for suffix in (".txt", ".gold.json"):
        shutil.copy(BUILTIN_SET / f"en1{suffix}", tmp_path / f"en1{suffix}")
    (tmp_path / "en1.reference.json").write_text("{}", encoding="utf-8")
    args = args_of(str(tmp_path), "--remote", "http://127.0.0.1:9", "--out", str(tmp_path / "out"))
    with pytest.raises(InputError, match=r"en1\.reference\.json"):
        cmd_eval(args)
    assert not (tmp_path / "out").exists()
    # Both counts given: the reference is not read, so it does not stop the run's checks.
    both = _config("a", args_of(str(tmp_path), "--remote", "http://x", "--panels", "2", "--dialogue", "1"))
    request = case_request(both, load_gold_set(tmp_path)[0], 0)
    assert (request.panels, request.dialogue) == (2, 1)


def test_means_and_the_seed_to_seed_spread():
    config = EvalConfig("a", {"model": "m"}, ScreenplayRequest())
    records = [
        record("a", "en1", 0, quote_recall=0.5, valid=True),
        record("a", "en2", 0, quote_recall=0.7, valid=True),
        record("a", "en1", 1, quote_recall=0.9, valid=True),
        record("a", "en2", 1, quote_recall=0.3, valid=False),
    ]
    summary = summarise(config, records)
    assert summary.mean["quote_recall"]["mean"] == pytest.approx(0.6)
    # Seed 0's mean 0.6, seed 1's 0.6: no spread between seeds.
    assert summary.mean["quote_recall"]["spread"] == pytest.approx(0.0)
    assert summary.chapters["en1"]["quote_recall"]["mean"] == pytest.approx(0.7)
    assert summary.chapters["en1"]["quote_recall"]["spread"] == pytest.approx(0.2828427, abs=1e-6)
    assert summary.mean["valid"]["mean"] == pytest.approx(0.75)
    assert summary.mean["speaker_accuracy"] == {"mean": None, "spread": None}


def test_a_difference_beyond_the_spread_is_marked():
    config = EvalConfig("a", {}, ScreenplayRequest())
    a = summarise(config, [record("a", "en1", s, quote_recall=v) for s, v in ((0, 0.4), (1, 0.5))])
    b = summarise(config, [record("b", "en1", s, quote_recall=v) for s, v in ((0, 0.8), (1, 0.9))])
    row = compare(a, b)["quote_recall"]
    assert row["diff"] == pytest.approx(0.4) and row["spread"] == pytest.approx(0.0707107, abs=1e-6)
    assert row["exceeds"] is True
    close = summarise(config, [record("b", "en1", s, quote_recall=v) for s, v in ((0, 0.3), (1, 0.7))])
    assert compare(a, close)["quote_recall"]["exceeds"] is False
    one_seed = summarise(config, [record("a", "en1", 0, quote_recall=0.4)])
    assert compare(one_seed, one_seed)["quote_recall"]["exceeds"] is None  # no spread with one seed


def test_the_report_is_json_and_a_table():
    cases = [c for c in load_gold_set(BUILTIN_SET) if c.id in ("en1", "ja1")]
    config = EvalConfig("a", {"model": "m.gguf"}, ScreenplayRequest())
    summary = summarise(config, [record("a", c.id, 0, quote_recall=0.5, tokens=100) for c in cases])
    report = eval_report("gold", cases, [0], BUILTIN_SET, [summary, summary])
    assert set(report) == {"set", "chapters", "seeds", "out", "figures", "configs", "compare"}
    json.dumps(report)
    text = format_report(report)
    assert "configuration a: model=m.gguf (0 runs failed)" in text
    assert "a vs b" in text and "quote_recall" in text
    assert any(line.startswith("mean ") for line in text.splitlines())
