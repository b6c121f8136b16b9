from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from detector.cli.main import main
from detector.text.tokenizers import load_tokenizer
from tests.detector.text.test_tokenizers import word_vocabulary
from tests.detector.toy import keyed_sample

KEY = 0xFEEDFACECAFEBEEF


@pytest.fixture(scope="module")
def watermarked_text():
    tok = load_tokenizer()
    rng = np.random.default_rng(12)
    return tok.decode(
        keyed_sample(KEY, rng.normal(0, 1.5, (120, 3000)), vocab_ids=word_vocabulary(tok))
    )


def run(capsys, args, stdin: bytes | None = None, monkeypatch=None):
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_it_prints_the_verdict_as_json(capsys, tmp_path, watermarked_text):
    path = tmp_path / "t.txt"
    path.write_text(watermarked_text)
    code, out, err = run(capsys, ["detect", "--key", str(KEY), str(path)])
    result = json.loads(out)
    assert code == 0 and err == ""
    assert result["is_watermarked"] and result["log10_p"] < -6
    assert result["verdict"] == "watermarked" and result["verdict_reason"]
    assert result["num_scored_tokens"] <= result["num_tokens"]
    assert str(KEY) not in out and hex(KEY)[2:] not in out


def test_it_prints_the_three_way_verdict_and_its_reason(capsys, tmp_path):
    from tests.provenance.watermark import HUMAN_TEXT

    path = tmp_path / "human.txt"
    path.write_text(HUMAN_TEXT)
    _, out, _ = run(capsys, ["detect", "--key", str(KEY), str(path)])
    short = json.loads(out)
    assert short["verdict"] == "inconclusive" and short["is_watermarked"] is False
    n = short["num_scored_tokens"]  # de-duplicated tokens minus pairs common in human text
    vllm = short["gamma"]["vllm_num_scored_tokens"]  # vLLM's statistic, under "gamma"
    assert 60 < n < 200 and n + short["num_common_tokens"] == vllm
    # the default power model, at the Gamma test's share of the level (the span scan has the
    # rest: weighted Bonferroni, 0.01 x GAMMA_SHARE)
    from detector.evidence import power
    from detector.evidence.localize import GAMMA_SHARE

    needed = power.tokens_for_power(
        power.mean_score_for(power.DEFAULT_TOKENS_NEEDED), np.log10(0.01 * GAMMA_SHARE)
    )
    assert needed > power.DEFAULT_TOKENS_NEEDED
    assert short["verdict_reason"].startswith(f"only {n} tokens could be scored; about {needed}")
    assert short["verdict_tokens_needed"] == needed
    _, out, _ = run(capsys, ["detect", "--key", str(KEY), "--tokens-needed", "60", str(path)])
    assert json.loads(out)["verdict"] == "not_watermarked"


def test_it_names_the_ngram_table_that_filtered_the_scored_tokens(capsys, tmp_path):
    from detector.text.tokenizers import load_tokenizer

    path = tmp_path / "text.txt"
    path.write_text("Permission is hereby granted, free of charge, to any person obtaining")
    _, out, _ = run(capsys, ["detect", "--key", str(KEY), str(path)])
    assert json.loads(out)["ngram_table"] == load_tokenizer().ngram_table.content_hash
    _, out, _ = run(capsys, ["detect", "--key", str(KEY), "--all-pairs", str(path)])
    assert json.loads(out)["ngram_table"] is None


def test_tokens_flag_adds_one_row_per_token(capsys, tmp_path, watermarked_text, monkeypatch):
    code, out, _ = run(
        capsys,
        ["detect", "--key", hex(KEY), "--tokens", "-"],
        watermarked_text.encode(),
        monkeypatch,
    )
    rows = json.loads(out)["tokens"]
    assert code == 0 and len(rows) == json.loads(out)["num_tokens"]
    assert "".join(r["text"] for r in rows) == watermarked_text
    assert {"token_id", "score", "scored", "start", "end"} <= set(rows[0])


def test_the_key_can_come_from_a_file(capsys, tmp_path, watermarked_text):
    (tmp_path / "key").write_text(f"{KEY}\n")
    (tmp_path / "t.txt").write_text(watermarked_text)
    code, out, _ = run(
        capsys, ["detect", "--key-file", str(tmp_path / "key"), str(tmp_path / "t.txt")]
    )
    assert code == 0 and json.loads(out)["is_watermarked"]


@pytest.mark.parametrize(
    "args,stdin,message",
    [
        (["detect", "--key", "1", "-"], b"", "no text"),
        (["detect", "--key", "1", "-"], b"\xff\xfeabc", "UTF-8"),
        (["detect", "--key", str(2**64), "-"], b"hello", "2**64"),
        (["detect", "--key", "-5", "-"], b"hello", "2**64"),
        (["detect", "--key", "abc", "-"], b"hello", "integer"),
        (["detect", "--key", "1", "--tokenizer", "/no/such/dir", "-"], b"hello", "no tokenizer"),
        (["detect", "--key", "1", "/no/such/file"], None, "cannot read"),
        (["detect", "--key", "1", "--threshold", "2", "-"], b"hello", "threshold"),
        (["nonsense"], None, "invalid choice"),
    ],
)
def test_bad_input_gets_one_line_and_status_2(capsys, monkeypatch, args, stdin, message):
    code, out, err = run(capsys, args, stdin, monkeypatch)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_key_out_of_range_is_not_echoed(capsys, monkeypatch):
    secret = str(2**64 + 12345)
    code, out, err = run(capsys, ["detect", "--key", secret, "-"], b"hello", monkeypatch)
    assert code == 2 and secret not in err


def test_the_module_runs_as_a_program(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.run(
        [sys.executable, "-m", "detector", "detect", "--key", "7", "-"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2 and b"no text" in proc.stderr and b"Traceback" not in proc.stderr


def test_the_decision_localizes_a_watermarked_passage_inside_human_text(capsys, tmp_path):
    from tests.detector.planted import human_ids

    tok = load_tokenizer()
    human = tok.decode(human_ids()[:1500])
    rng = np.random.default_rng(4)
    marked = tok.decode(
        keyed_sample(KEY, rng.normal(0, 1.5, (150, 3000)), vocab_ids=word_vocabulary(tok))
    )
    cut = human.rfind(" ", 0, len(human) // 2)
    text = human[:cut] + marked + human[cut:]
    path = tmp_path / "t.txt"
    path.write_text(text)
    code, out, _ = run(capsys, ["detect", "--key", str(KEY), str(path)])
    assert code == 0
    loc = json.loads(out)  # the decision (global test and span scan) is the top level
    assert loc["is_watermarked"] and len(loc["spans"]) == 1
    span = loc["spans"][0]
    assert abs(span["start_char"] - cut) < 150 and abs(span["end_char"] - cut - len(marked)) < 150
    assert span["text"] == text[span["start_char"] : span["end_char"]]
    assert span["p_value"] <= 0.01 and str(KEY) not in out
    # the plain Gamma test over the whole text, kept beside the decision for vLLM
    assert loc["gamma"]["log10_p"] >= loc["log10_p"] - np.log10(2) - 1e-9
    # --spans is accepted and changes nothing: the spans are always part of the decision
    _, again, _ = run(capsys, ["detect", "--key", str(KEY), "--spans", str(path)])
    assert json.loads(again) == loc
