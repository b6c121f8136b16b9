from __future__ import annotations

import json
import os

import pytest

from detector.core.config import KeyConfig
from generator.config import KeyFileError, KeyStore, parse_entry

SECRET = 0xDEADBEEFCAFEF00D


def test_it_reads_vllms_json_shape_with_upstream_defaults():
    s = parse_entry({"algorithm": "gumbel", "key": 42})
    assert (s.key, s.context_width, s.alpha, s.deduplicate_contexts) == (42, 4, 0.1, "single_turn")
    assert s.deduplicate_contexts_max_history == 8192


def test_its_repr_never_shows_the_key():
    s = KeyConfig(key=SECRET, name="team-a")
    assert str(SECRET) not in repr(s) and hex(SECRET) not in repr(s)


@pytest.mark.parametrize(
    "config",
    [
        {"key": -1},
        {"key": 2**64},
        {"key": 1, "algorithm": "kgw"},
        {"key": 1, "context_width": 0},
        {"key": 1, "alpha": 1.5},
        {"key": 1, "deduplicate_contexts": "sometimes"},
        {"key": 1, "deduplicate_contexts_max_history": 0},
        {"key": 1, "colour": "red"},
        {"algorithm": "gumbel"},
    ],
)
def test_it_rejects_a_malformed_configuration(config):
    with pytest.raises(KeyFileError):
        parse_entry(config)


def test_a_key_file_maps_names_to_settings(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(
        json.dumps(
            {"team-a": {"key": SECRET}, "team-b": {"key": 7, "algorithm": "dual_key_gumbel"}}
        )
    )
    store = KeyStore.from_file(path)
    assert sorted(store) == ["team-a", "team-b"]
    assert store["team-b"].algorithm == "dual_key_gumbel"
    assert store["team-a"].key == SECRET and store["team-a"].name == "team-a"
    assert str(SECRET) not in repr(store)


def test_an_unknown_key_name_is_a_clear_error(tmp_path):
    store = KeyStore.from_mapping({"team-a": {"key": SECRET}})
    with pytest.raises(KeyError, match="team-b"):
        store["team-b"]


def test_errors_about_a_key_file_never_quote_its_secrets(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text('{"team-a": {"key": ' + str(SECRET) + ', "colour": 1}}')
    with pytest.raises(KeyFileError) as err:
        KeyStore.from_file(path)
    assert str(SECRET) not in str(err.value)
    path.write_text('{"team-a": {"key": ' + str(SECRET) + ",, }}")
    with pytest.raises(KeyFileError) as err:
        KeyStore.from_file(path)
    assert str(SECRET) not in str(err.value)
    path.write_text('{"team-a": {"key": ' + str(2**64 + SECRET) + "}}")
    with pytest.raises(KeyFileError) as err:
        KeyStore.from_file(path)
    assert str(2**64 + SECRET) not in str(err.value)


def test_a_missing_key_file_is_a_clear_error(tmp_path):
    with pytest.raises(KeyFileError, match="cannot read"):
        KeyStore.from_file(tmp_path / "nope.json")


def test_a_bare_vllm_watermark_config_is_one_key_named_default():
    store = KeyStore.from_mapping({"algorithm": "dual_key_gumbel", "key": SECRET, "alpha": 0.2})
    assert list(store) == ["default"] and store["default"].alpha == 0.2


def _rewrite(path, data, bump):
    path.write_text(json.dumps(data))
    os.utime(path, ns=(bump, bump))  # a distinct mtime even within one timestamp tick


def test_a_store_follows_its_key_file_when_it_changes(tmp_path):
    path = tmp_path / "keys.json"
    _rewrite(path, {"a": {"key": 1}}, 10**18)
    store = KeyStore.from_file(path)
    assert store.refreshed() is store
    _rewrite(path, {"a": {"key": 2}, "b": {"key": 3}}, 10**18 + 10**9)
    fresh = store.refreshed()
    assert fresh["a"].key == 2 and "b" in fresh


def test_a_broken_rewrite_keeps_the_last_good_keys(tmp_path, caplog):
    path = tmp_path / "keys.json"
    _rewrite(path, {"a": {"key": SECRET}}, 10**18)
    store = KeyStore.from_file(path)
    path.write_text('{"a": {"key": ' + str(SECRET + 1) + ', "oops": 1}}')
    os.utime(path, ns=(10**18 + 10**9, 10**18 + 10**9))
    assert store.refreshed()["a"].key == SECRET
    assert "keeping the previous keys" in caplog.text and str(SECRET + 1) not in caplog.text


def test_a_key_file_emptied_of_keys_retires_them_all(tmp_path):
    path = tmp_path / "keys.json"
    _rewrite(path, {"a": {"key": SECRET}}, 10**18)
    store = KeyStore.from_file(path)
    _rewrite(path, {}, 10**18 + 10**9)
    assert len(store.refreshed()) == 0


def test_every_variable_the_generator_reads_is_named_in_config_and_documented():
    from pathlib import Path

    from generator import config

    names = {value for key, value in vars(config).items() if key.endswith("_ENV")}
    assert len(names) == 16 and all(name.startswith("PROVENANCE_") for name in names)
    page = (Path(__file__).resolve().parents[2] / "docs" / "generator.md").read_text()
    assert {name for name in names if f"`{name}`" not in page} == set()


def test_the_environment_readers_treat_empty_as_unset(monkeypatch):
    from generator import config

    monkeypatch.setenv(config.DEFAULT_KEY_ENV, "")
    monkeypatch.setenv(config.MODEL_ENV, "")
    monkeypatch.setenv(config.ENFORCE_ENV, "0")
    monkeypatch.setenv(config.MIN_TOP_K_ENV, "3")
    monkeypatch.delenv(config.MAX_MIN_P_ENV, raising=False)
    assert config.default_key() is None and config.served_model() == "unknown"
    assert config.enforce_watermark() is False
    assert config.floor_values() == {config.MIN_TOP_K_ENV: "3"}
    monkeypatch.setenv(config.DEFAULT_KEY_ENV, "team-a")
    monkeypatch.setenv(config.ENFORCE_ENV, "1")
    assert config.default_key() == "team-a" and config.enforce_watermark() is True


@pytest.mark.parametrize("mode", [0o666, 0o664, 0o646])
def test_a_key_file_others_can_write_is_refused(tmp_path, mode):
    """Anyone who can write the key file chooses the keys every reply is watermarked with."""
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"team-a": {"key": 1, "algorithm": "gumbel"}}))
    path.chmod(mode)
    with pytest.raises(KeyFileError, match=f"chmod go-w {path}"):
        KeyStore.from_file(path)


def test_a_key_file_made_writable_by_others_keeps_the_last_good_keys(tmp_path, caplog):
    path = tmp_path / "keys.json"
    _rewrite(path, {"team-a": {"key": 1}}, 10**18)
    path.chmod(0o600)
    store = KeyStore.from_file(path)
    _rewrite(path, {"team-a": {"key": 2}}, 10**18 + 10**9)
    path.chmod(0o666)
    assert store.refreshed()["team-a"].key == 1
    assert "chmod go-w" in caplog.text


def test_a_key_files_own_fields_stay_with_the_generator(tmp_path):
    from generator.config import KeyOptions

    (tmp_path / "team-a.key").write_text("42\n")
    path = tmp_path / "keys.json"
    path.write_text(
        '{"team-a": {"key_file": "team-a.key", "content_credentials": true, "public_id": "pub-1"},'
        ' "team-b": {"key": 9}}'
    )
    store = KeyStore.from_file(path)
    assert store["team-a"].key == 42  # key_file read from the key file's folder
    assert store.options("team-a") == KeyOptions(True, "pub-1")
    assert store.options("team-b") == KeyOptions(False, "team-b")
    assert "content_credentials" not in store["team-a"].to_vllm()
    for bad in (
        '{"k": {"key": 1, "public_id": "a b"}}',
        '{"k": {"key": 1, "content_credentials": 1}}',
    ):
        with pytest.raises(KeyFileError):
            KeyStore.from_mapping(json.loads(bad))


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("team-a", "team-a"),
        ("a\nb", "a\\nb"),
        ("a\r\nb", "a\\r\\nb"),
        ("a\\nb", "a\\\\nb"),  # a literal backslash cannot pass for an escape
        ("\x1b[2J", "\\x1b[2J"),
        ("é\u2028\x85", "\\xe9\\u2028\\x85"),
    ],
)
def test_printable_escapes_everything_that_could_end_or_forge_a_log_line(value, shown):
    from generator.config import printable

    assert printable(value) == shown and printable(value).isprintable()


@pytest.mark.parametrize("name", ["team-a\n", "", "-lead", "a b", "a" * 129, 7, None])
def test_a_key_name_is_matched_whole(name):
    from generator.config import valid_key_name

    assert not valid_key_name(name)
    assert valid_key_name("k12-team.a:1_x") and valid_key_name("a" * 128)
