"""``python -m detector verify``: exit 0 and one ``OK:`` line for a valid report, exit 1 and
one ``FAILED:`` line naming the check that failed, and never the key value."""

from __future__ import annotations

import argparse
import json

import pytest

from detector.cli.main import main
from detector.cli.verify import EXIT_FAILED, EXIT_OK, run_verify
from detector.text.tokenizers import load_tokenizer
from tests.detector.reports.payloads import KEY, issuer, payload, watermarked_text


@pytest.fixture(scope="module")
def signed():
    text = watermarked_text()
    signer = issuer()
    return text, signer.sign(payload(text, [KEY + 1, KEY])), signer


@pytest.fixture
def files(tmp_path, signed):
    text, token, signer = signed
    (tmp_path / "report.jws").write_text(token)
    (tmp_path / "jwks.json").write_text(json.dumps(signer.jwks))
    (tmp_path / "text.txt").write_bytes(text.encode("utf-8"))
    (tmp_path / "key").write_text(f"{KEY}\n")
    return tmp_path


def _base(d) -> list[str]:
    return ["verify", str(d / "report.jws"), "--jwks", str(d / "jwks.json")]


def _full(d) -> list[str]:
    return [
        *_base(d),
        *("--text", str(d / "text.txt")),
        *("--key-file", str(d / "key"), "--tokenizer", "default"),
    ]


def _run(capsys, args) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_valid_report_with_text_and_key_is_one_ok_line(capsys, files, signed):
    code, out, err = _run(capsys, _full(files))
    kid = signed[2].private["kid"]
    assert (code, err) == (EXIT_OK, "") and out.count("\n") == 1
    assert out.startswith(f"OK: signature valid (key {kid}); text matches (sha256 ")
    assert "recomputed: " in out and "as reported (the report's n-gram table" in out
    assert "with 1 span(s)" in out


def test_without_text_only_the_signature_is_checked(capsys, files):
    code, out, _ = _run(capsys, _base(files))
    assert code == EXIT_OK and out.strip().endswith("text not checked (no --text)")


def test_another_hypothesis_is_recomputed_when_named(capsys, files):
    (files / "key").write_text(str(KEY + 1))
    code, out, err = _run(capsys, [*_full(files), "--hypothesis", "0"])
    assert code == EXIT_OK, err
    assert "with 0 span(s)" in out


def _failed(capsys, args, message: str) -> str:
    code, out, err = _run(capsys, args)
    assert code == EXIT_FAILED and out == ""
    assert err.startswith("FAILED: ") and err.count("\n") == 1 and message in err, err
    assert "Traceback" not in err
    return err


def test_a_changed_text_fails(capsys, files):
    (files / "text.txt").write_text("another text altogether")
    _failed(capsys, _full(files), "does not match the report's SHA-256")


def test_a_tampered_report_fails(capsys, files):
    header, body, signature = (files / "report.jws").read_text().split(".")
    (files / "report.jws").write_text(f"{header}.{body[:-2]}xx.{signature}")
    _failed(capsys, _base(files), "")


def test_a_revoked_signing_key_fails(capsys, files, signed):
    jwks = {**signed[2].jwks, "revoked": [signed[2].private["kid"]]}
    (files / "jwks.json").write_text(json.dumps(jwks))
    _failed(capsys, _base(files), "revoked")


def test_another_key_fails_without_echoing_it(capsys, files):
    wrong = KEY ^ 0xFF
    (files / "key").write_text(str(wrong))
    err = _failed(capsys, _full(files), "recomputed")
    assert str(wrong) not in err and f"{wrong:x}" not in err


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda a, d: a[:-2], "--key-file and --tokenizer go together"),
        (lambda a, d: [*a[:6], "--ngram-table", str(d / "t.npz")], "--ngram-table is for"),
        (lambda a, d: [*a[:4], *a[6:]], "recomputing needs the text"),
    ],
)
def test_flags_that_go_together(capsys, files, edit, message):
    _failed(capsys, edit(_full(files), files), message)


def test_unreadable_inputs_fail_with_their_names(capsys, files):
    jwks = (files / "jwks.json").read_text()
    (files / "jwks.json").write_text("{not json")
    _failed(capsys, _base(files), "is not JSON")
    _failed(capsys, ["verify", str(files / "none.jws"), "--jwks", "x"], "cannot read the JWKS")
    (files / "jwks.json").write_text(jwks)
    (files / "text.txt").write_bytes(b"\xff\xfe")
    _failed(capsys, _full(files), "is not valid UTF-8")


def test_a_bad_key_file_tokenizer_or_table_fails(capsys, files, tmp_path):
    full = _full(files)
    _failed(capsys, [*full[:7], str(files / "no-key"), *full[8:]], "cannot read the key file")
    _failed(capsys, [*full[:-1], str(tmp_path / "no-tokenizer")], "tokenizer")
    (files / "bad.npz").write_bytes(b"not a table")
    _failed(capsys, [*full, "--ngram-table", str(files / "bad.npz")], "cannot read the n-gram")


def test_the_local_table_file_named_by_the_report_is_used(capsys, files):
    load_tokenizer().ngram_table.save(files / "table.npz")
    code, out, err = _run(capsys, [*_full(files), "--ngram-table", str(files / "table.npz")])
    assert code == EXIT_OK, err
    assert "the report's n-gram table" in out


def test_run_verify_reads_the_key_through_the_given_reader(capsys, files):
    args = argparse.Namespace(
        report=str(files / "report.jws"),
        jwks=str(files / "jwks.json"),
        text=str(files / "text.txt"),
        key_file="unused",
        tokenizer="default",
        hypothesis=None,
        ngram_table=None,
    )
    read = []
    assert run_verify(args, lambda a: read.append(a) or KEY) == EXIT_OK
    assert read == [args]
    assert run_verify(args, lambda a: KEY + 5) == EXIT_FAILED


@pytest.fixture
def receipt_files(tmp_path):
    from detector.reports.receipt import sign_receipt
    from detector.reports.signed import text_sha256

    text = "Checked in public.\n"
    signer = issuer()
    body = {
        "issuer": "Acme",
        "text": {"sha256": text_sha256(text)},
        "verdict": "watermarked",
        "model": "Acme Assistant",
        "strength": -9,
        "tokens_scored": 120,
        "models": ["Acme Assistant"],
        "at": "2026-12-02T12:00:00+00:00",
    }
    (tmp_path / "receipt.jws").write_text(sign_receipt(body, signer.private))
    (tmp_path / "jwks.json").write_text(json.dumps(signer.jwks))
    (tmp_path / "text.txt").write_bytes(text.encode())
    return tmp_path


def _receipt_args(d) -> list[str]:
    return ["verify", str(d / "receipt.jws"), "--jwks", str(d / "jwks.json")]


def test_a_receipt_verifies_offline_with_its_text(capsys, receipt_files):
    code, out, err = _run(
        capsys, [*_receipt_args(receipt_files), "--text", str(receipt_files / "text.txt")]
    )
    assert (code, err) == (EXIT_OK, "")
    assert "receipt signature valid" in out and "watermarked (Acme Assistant)" in out
    assert "text matches" in out


def test_a_receipt_fails_on_one_changed_character_of_the_text(capsys, receipt_files):
    (receipt_files / "text.txt").write_text("Checked in public!\n")
    args = [*_receipt_args(receipt_files), "--text", str(receipt_files / "text.txt")]
    _failed(capsys, args, "the text does not match")


def test_a_receipt_fails_on_one_changed_character_of_itself(capsys, receipt_files):
    path = receipt_files / "receipt.jws"
    token = path.read_text()
    i = token.index(".") + 5
    path.write_text(token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1 :])
    _failed(capsys, _receipt_args(receipt_files), "FAILED")


def test_a_receipt_is_not_recomputed(capsys, receipt_files):
    (receipt_files / "key").write_text("1")
    args = [
        *_receipt_args(receipt_files),
        *("--text", str(receipt_files / "text.txt")),
        *("--key-file", str(receipt_files / "key"), "--tokenizer", "default"),
    ]
    _failed(capsys, args, "a receipt holds no hypotheses")
