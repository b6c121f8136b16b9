"""Mistral's tokenizers, as shipped in the mistral-common wheel, rebuilt as fast tokenizers.

vLLM serves Mistral models (``mistralai/Mistral-7B-Instruct-v0.3`` in its watermarking
announcement) with mistral-common's own tokenizers. Detection needs character offsets, which
the ``tokenizers`` library gives, so both files are converted once into a ``tokenizer.json``
that encodes to the same ids as mistral-common (tests compare them on prose, code, CJK, emoji
and random mixtures):

* ``mistral-v3``: the SentencePiece BPE model of Mistral-7B-Instruct-v0.3 (32,768 pieces,
  byte fallback, a dummy-prefix "▁", no other normalization). SentencePiece merges the pair
  whose merged piece scores highest; a BPE merge list ranked by that score does the same.
  Control pieces (``<s>``, ``[INST]``...) are never produced from text, as in SentencePiece.
  The one known difference: the 20 user-defined ``[REFERENCE_DOC_n]`` pieces are matched in
  text as in SentencePiece, but the dummy "▁" is prepended again to the text after each of
  them (the added-token split normalizes each side alone), so the ids right next to one of
  these placeholders can differ by a "▁" token.
* ``mistral-tekken``: Tekken (Mistral-Nemo and later; tiktoken-style byte-level BPE over
  130,072 ranks after 1,000 special ids). Merges are ranked by the merged token's rank and
  a pre-token that is a whole vocabulary entry is taken as is (tiktoken's rule). Special
  tokens sit in the vocabulary at their ids but, as in mistral-common's ``encode``, text that
  spells one out is encoded as ordinary text.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from typing import Any

MISTRAL_V3 = "mistral-v3"
MISTRAL_TEKKEN = "mistral-tekken"
# Built-in name -> the file inside mistral_common/data/ (the files MistralTokenizer.v3() and
# MistralTokenizer.v3(is_tekken=True) load).
FILES = {
    MISTRAL_V3: "mistral_instruct_tokenizer_240323.model.v3",
    MISTRAL_TEKKEN: "tekken_240718.json",
}
BUILTINS: tuple[str, ...] = tuple(FILES)

# SentencePiece piece types (sentencepiece_model.proto).
_NORMAL, _USER_DEFINED = 1, 4


class MistralTokenizerError(ValueError):
    """The mistral-common wheel or one of its tokenizer files is missing or unreadable."""


def data_file(name: str) -> Path:
    """The tokenizer file of built-in ``name`` inside the installed mistral-common wheel."""
    if name not in FILES:
        raise MistralTokenizerError(f"unknown built-in tokenizer {name!r}; known: {BUILTINS}")
    spec = importlib.util.find_spec("mistral_common")
    if spec is None or not spec.submodule_search_locations:
        raise MistralTokenizerError("mistral-common is not installed (pip install mistral-common)")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / FILES[name]
    if not path.is_file():
        raise MistralTokenizerError(f"mistral-common ships no {FILES[name]}")
    return path


def convert(name: str) -> Any:
    """The ``tokenizers.Tokenizer`` equivalent of built-in ``name``."""
    path = data_file(name)
    return sentencepiece_backend(path) if name == MISTRAL_V3 else tekken_backend(path)


def sentencepiece_backend(path: Path) -> Any:
    """A fast tokenizer equal to a SentencePiece BPE model with byte fallback."""
    from sentencepiece import sentencepiece_model_pb2
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers
    from tokenizers.models import BPE

    proto = sentencepiece_model_pb2.ModelProto()  # type: ignore[attr-defined]
    proto.ParseFromString(path.read_bytes())
    spec = proto.normalizer_spec
    if proto.trainer_spec.model_type != 2 or not proto.trainer_spec.byte_fallback:
        raise MistralTokenizerError(f"{path.name} is not a byte-fallback BPE model")
    if spec.name != "identity" or spec.remove_extra_whitespaces or not spec.add_dummy_prefix:
        raise MistralTokenizerError(f"{path.name} normalizes text in a way not reproduced here")
    pieces = [(p.piece, p.type, p.score) for p in proto.pieces]
    vocab = {piece: i for i, (piece, _, _) in enumerate(pieces)}
    backend = Tokenizer(
        BPE(
            vocab=vocab,
            merges=_sentencepiece_merges(pieces, vocab),
            unk_token=proto.trainer_spec.unk_piece,
            fuse_unk=True,
            byte_fallback=True,
            dropout=None,
        )
    )
    backend.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
    )
    backend.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    user_defined = [piece for piece, kind, _ in pieces if kind == _USER_DEFINED]
    backend.add_tokens([AddedToken(p, normalized=False, special=False) for p in user_defined])
    return backend


def _sentencepiece_merges(
    pieces: list[tuple[str, int, float]], vocab: dict[str, int]
) -> list[tuple[str, str]]:
    # Only normal pieces merge: control, byte and unknown pieces never come out of text.
    normal = {piece for piece, kind, _ in pieces if kind == _NORMAL}
    ranked: list[tuple[float, int, str, str]] = []
    for i, (piece, kind, score) in enumerate(pieces):
        if kind != _NORMAL or len(piece) < 2:
            continue
        splits = [(piece[:k], piece[k:]) for k in range(1, len(piece))]
        splits = [(a, b) for a, b in splits if a in normal and b in normal]
        splits.sort(key=lambda ab: (vocab[ab[0]], vocab[ab[1]]))
        ranked.extend((-score, i, a, b) for a, b in splits)
    ranked.sort(key=lambda row: (row[0], row[1]))  # highest score first; ties by piece id
    return [(a, b) for _, _, a, b in ranked]


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte (what ByteLevel pre-tokenization emits)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def tekken_backend(path: Path) -> Any:
    """A fast tokenizer equal to mistral-common's Tekkenizer for the file at ``path``."""
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers
    from tokenizers.models import BPE

    config = json.loads(path.read_text(encoding="utf-8"))
    reference = Tekkenizer.from_file(path)  # the special tokens' names and count
    specials = reference.num_special_tokens
    inner = reference.n_words - specials
    ranks = {base64.b64decode(x["token_bytes"]): x["rank"] for x in config["vocab"][:inner]}
    alphabet = _byte_alphabet()

    def as_text(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    vocab = {as_text(token): rank + specials for token, rank in ranks.items()}
    for i in range(specials):
        name = reference.id_to_piece(i)
        if name in vocab:
            raise MistralTokenizerError(f"special token {name!r} collides with a vocabulary entry")
        vocab[name] = i
    backend = Tokenizer(
        BPE(vocab=vocab, merges=_rank_merges(ranks, as_text), fuse_unk=False, ignore_merges=True)
    )
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(config["config"]["pattern"]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    return backend


def _rank_merges(ranks: dict[bytes, int], as_text: Any) -> list[tuple[str, str]]:
    # tiktoken merges the adjacent pair whose concatenation has the lowest rank.
    ranked: list[tuple[int, bytes, bytes]] = []
    for token, rank in ranks.items():
        splits = [(token[:k], token[k:]) for k in range(1, len(token))]
        splits = [(a, b) for a, b in splits if a in ranks and b in ranks]
        splits.sort(key=lambda ab: (ranks[ab[0]], ranks[ab[1]]))
        ranked.extend((rank, a, b) for a, b in splits)
    ranked.sort(key=lambda row: row[0])
    return [(as_text(a), as_text(b)) for _, a, b in ranked]
