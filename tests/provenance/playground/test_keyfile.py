"""The generator's key file written from the registry: every active key, unique names,
owner-only, every field through the generator and the detector."""

from __future__ import annotations

import stat
from dataclasses import replace

import pytest
import torch

from detector.evidence.detection import detect_config
from generator.config import KeyStore
from generator.core import RowState, SamplingSettings, watermark_step
from provenance.keys.selectors import key_config
from provenance.keys.services import key_create, key_retire
from provenance.playground.keyfile import (
    generator_key_name,
    keyfile_content,
    keyfile_write,
    keyset_fingerprint,
)
from tests.provenance.conftest import KEY_VALUE

pytestmark = pytest.mark.django_db


def test_the_key_file_holds_every_active_key_owner_only(cast, alice_key, tokenizer_row, tmp_path):
    same_name, _ = key_create(name="acme-main", team=cast["other"], tokenizer=tokenizer_row)
    old, _ = key_create(name="old", team=cast["other"], tokenizer=tokenizer_row)
    key_retire(key=old)
    path = tmp_path / "keys.json"
    assert keyfile_write(path) == 2
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    store = KeyStore.from_file(path)  # the generator's own loader accepts it
    assert sorted(store) == sorted([generator_key_name(alice_key), generator_key_name(same_name)])
    assert store[generator_key_name(alice_key)].key == KEY_VALUE


ROUND_TRIP_KEY = 0xC0FF_EE00_DEAD_BEEF  # above 2**63: the key file keeps all 64 bits


@pytest.mark.parametrize(
    ("algorithm", "alpha", "width", "dedup"),
    [("gumbel", 0.1, 4, True), ("dual_key_gumbel", 0.3, 3, False)],
)
def test_a_registry_key_keeps_every_field_through_the_key_file_generator_and_detector(
    cast, tokenizer_row, tmp_path, algorithm, alpha, width, dedup
):
    key, value = key_create(
        name="round trip",
        team=cast["acme"],
        tokenizer=tokenizer_row,
        value=ROUND_TRIP_KEY,  # fixed: the wrong key's p-value below is then not a draw
        algorithm=algorithm,
        alpha=alpha,
        context_width=width,
        deduplicate=dedup,
    )
    registry = key_config(key)  # what checks and the meter test
    keyfile_write(tmp_path / "keys.json")
    generated = KeyStore.from_file(tmp_path / "keys.json")[generator_key_name(key)]
    assert replace(generated, name=key.name) == registry  # every field, the value included
    assert (generated.key, generated.algorithm, generated.alpha) == (value, algorithm, alpha)
    assert generated.context_width == width and generated.deduplicate == dedup
    # The generator draws with the key file's entry; the detector tests the registry's.
    out: list[int] = []
    row = RowState(generated, SamplingSettings(), [], out, rng=torch.Generator().manual_seed(1))
    logits = torch.randn(80, 257, generator=torch.Generator().manual_seed(2)) * 3
    for step in range(80):
        out.append(int(watermark_step(logits[step : step + 1], [row], penalties=False)[0]))
    assert detect_config(out, registry).log10_p < -6
    # Under another key the same tokens are human text: a random key's value here would fail
    # this bound once in a thousand runs, as it did (log10 p = -3.98).
    assert detect_config(out, replace(registry, key=value ^ 1)).log10_p > -3


def test_a_generator_name_is_unique_and_safe(cast, alice_key, tokenizer_row):
    odd, _ = key_create(name="a key/with spaces!", team=cast["acme"], tokenizer=tokenizer_row)
    assert generator_key_name(odd) == f"k{odd.pk}-a-key-with-spaces-"
    assert generator_key_name(odd) != generator_key_name(alice_key)
    assert keyfile_content([alice_key])[generator_key_name(alice_key)]["key"] == KEY_VALUE


def test_the_fingerprint_changes_with_the_active_keys_and_holds_no_value(
    cast, alice_key, tokenizer_row
):
    before = keyset_fingerprint()
    assert before == keyset_fingerprint() and str(KEY_VALUE) not in before
    added, _ = key_create(name="added", team=cast["acme"], tokenizer=tokenizer_row)
    with_added = keyset_fingerprint()
    assert with_added != before
    key_retire(key=added)
    assert keyset_fingerprint() == before
