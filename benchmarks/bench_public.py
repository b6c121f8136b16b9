"""The public verifier's false-positive rate on human text, with its power beside it.

A public check tests a text against every published key at once, Holm over all of them
(``provenance.public.services.decisions``, the function ``answer_for`` answers with; it calls
the product's ``score_texts``). This measures that decision, not a copy of it, at the
product's threshold (``PROVENANCE_THRESHOLD``), for families of 1, 3 and 8 published keys
(random 64-bit values, the registry's default settings, the default SmolLM2 tokenizer, no
calibration: the detector's default power assumption):

- on human text (``detector.text.corpora``: prose, code, templated; none of them a source of
  the shipped n-gram tables) and on the site's own catalogs in ja, ko and zh_Hans (the
  ``msgstr`` of ``locale/*/LC_MESSAGES/django.po``, text no key marked), chunks of 250 tokens:
  the share answered "watermarked" (a false positive) with its exact 95% interval
  (Clopper-Pearson), and the share answered "inconclusive";
- on watermarked text of several lengths, marked under the family's first key: the spec's
  keyed Gumbel-max over a toy model (``tests.detector.toy``) at the planted helpers' signal
  per token (``tests.detector.planted``: mean score about 2.8, that of SmolLM2 prose at
  T = 1), over 2,000 word tokens that decode and tokenize back to themselves
  (``tests.provenance.watermark.word_tokens``), sent as text: the share answered
  "watermarked" naming that key's model (the power).

Each family size is drawn ``--draws`` times (new keys each time); the counts are pooled.

Run: ``python benchmarks/bench_public.py`` (``--chunks 300 --draws 4 --marked 100
--lengths 16,24,32,64 --families 1,3,8 --seed 11``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

LANGUAGES = ("ja", "ko", "zh_Hans")
NAMED = "Model 0"  # the public name of the key that marks the texts of the power


@dataclass(frozen=True)
class Rate:
    """``count`` of ``n``, with its exact (Clopper-Pearson) 95% interval."""

    count: int
    n: int

    @property
    def rate(self) -> float:
        return self.count / self.n if self.n else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        ci = stats.binomtest(self.count, self.n).proportion_ci(0.95, method="exact")
        return float(ci.low), float(ci.high)

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.count}/{self.n} = {self.rate:.4f} [{low:.4f}, {high:.4f}]"


def _django() -> None:
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


def catalog_chunks(loaded: Any, language: str, limit: int, size: int) -> list[str]:
    """Up to ``limit`` consecutive chunks of ``size`` tokens of a catalog's translations."""
    from babel.messages.pofile import read_po

    path = REPO / "locale" / language / "LC_MESSAGES" / "django.po"
    with path.open("rb") as handle:
        catalog = read_po(handle)
    strings = []
    for message in catalog:
        if message.id and message.string:
            parts = message.string if isinstance(message.string, tuple) else (message.string,)
            strings.extend(p for p in parts if p)
    ids = loaded.encode("\n".join(strings))
    starts = range(0, len(ids) - size + 1, size)
    return [loaded.decode(ids[s : s + size]) for s in starts][:limit]


def human_corpora(loaded: Any, chunks: int, size: int) -> dict[str, list[str]]:
    """Each corpus's texts: the shipped genres, then the catalogs' languages."""
    from detector.text import corpora

    out = {g: list(corpora.corpus(loaded, g, chunks, size).texts) for g in corpora.GENRES}
    for language in LANGUAGES:
        out[f"catalog-{language}"] = catalog_chunks(loaded, language, chunks, size)
    return out


def marked_ids(key: int, length: int, seed: int) -> np.ndarray:
    """``length`` tokens marked under ``key`` at the planted helpers' signal per token."""
    from tests.detector.planted import TEMPERATURE, VOCAB
    from tests.detector.toy import keyed_sample, toy_logits
    from tests.provenance.watermark import word_tokens

    rng = np.random.default_rng([seed, 1])
    vocab = rng.choice(word_tokens(), VOCAB, replace=False)
    logits = toy_logits(rng, VOCAB, length, temperature=TEMPERATURE)
    return keyed_sample(key, logits, seed=seed, vocab_ids=vocab)


def family(values: list[int], loaded: Any) -> list[Any]:
    """The published keys ``values`` as the product prepares them (one tokenizer group), in
    memory: rows never saved, each with the registry's default settings."""
    from provenance.keys.models import Tokenizer, WatermarkKey, registry_config
    from provenance.scoring.service import KeyGroup

    tokenizer = Tokenizer(
        name="SmolLM2-135M", source_kind=Tokenizer.Source.DEFAULT, content_hash=loaded.content_hash
    )
    keys = [WatermarkKey(name=f"key-{i}", public_name=f"Model {i}") for i in range(len(values))]
    configs = [
        registry_config(
            value=value,
            algorithm=key.algorithm,
            alpha=key.alpha,
            context_width=key.context_width,
            deduplicate=key.deduplicate,
            name=key.name,
        )
        for key, value in zip(keys, values, strict=True)
    ]
    return [KeyGroup(tokenizer=tokenizer, loaded=loaded, keys=tuple(keys), configs=tuple(configs))]


def measure(
    *,
    families: tuple[int, ...] = (1, 3, 8),
    draws: int = 4,
    chunks: int = 300,
    size: int = 250,
    lengths: tuple[int, ...] = (16, 24, 32, 64),
    marked: int = 100,
    seed: int = 11,
    threshold: float | None = None,
    corpora: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Every figure of the benchmark: per family size, the false positives and inconclusive
    answers per corpus and pooled, and the power per length (``Rate`` each)."""
    _django()
    from django.conf import settings

    from detector.text.tokenizers import load_tokenizer
    from provenance.public.services import INCONCLUSIVE, WATERMARKED, decisions

    threshold = settings.PROVENANCE_THRESHOLD if threshold is None else threshold
    loaded = load_tokenizer("default")
    texts = corpora if corpora is not None else human_corpora(loaded, chunks, size)
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"threshold": threshold, "corpora": {c: len(t) for c, t in texts.items()}}
    for m in families:
        fp: dict[str, list[int]] = {c: [0, 0, 0] for c in texts}  # watermarked, inconclusive, n
        hits = dict.fromkeys(lengths, 0)
        for _ in range(draws):
            values = [int(v) | (1 << 63) for v in rng.integers(0, 2**63, m, dtype=np.uint64)]
            groups = family(values, loaded)
            for name, chunk_texts in texts.items():
                for d in decisions(chunk_texts, groups, threshold=threshold):
                    fp[name][0] += d.verdict == WATERMARKED
                    fp[name][1] += d.verdict == INCONCLUSIVE
                    fp[name][2] += 1
            # marked under the family's first key: prefixes of one sequence per seed
            sequences = [marked_ids(values[0], max(lengths), seed=s) for s in range(marked)]
            for length in lengths:
                prefixes = [loaded.decode(ids[:length]) for ids in sequences]
                found = decisions(prefixes, groups, threshold=threshold)
                hits[length] += sum(d.verdict == WATERMARKED and d.model == NAMED for d in found)
        total = [sum(v[i] for v in fp.values()) for i in range(3)]
        out[m] = {
            "false_positive": Rate(total[0], total[2]),
            "inconclusive": Rate(total[1], total[2]),
            "per_corpus": {c: (Rate(v[0], v[2]), Rate(v[1], v[2])) for c, v in fp.items()},
            "power": {length: Rate(hits[length], draws * marked) for length in lengths},
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="1,3,8", help="published keys per family")
    parser.add_argument("--draws", type=int, default=4, help="random families of each size")
    parser.add_argument("--chunks", type=int, default=300, help="human texts per corpus")
    parser.add_argument("--size", type=int, default=250, help="tokens per human text")
    parser.add_argument("--lengths", default="16,24,32,64", help="tokens of the marked texts")
    parser.add_argument("--marked", type=int, default=100, help="marked texts per length")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    started = time.perf_counter()
    found = measure(
        families=tuple(int(x) for x in args.families.split(",")),
        draws=args.draws,
        chunks=args.chunks,
        size=args.size,
        lengths=tuple(int(x) for x in args.lengths.split(",")),
        marked=args.marked,
        seed=args.seed,
    )
    print(f"threshold {found['threshold']}; human texts per corpus: {found['corpora']}")
    for m in (k for k in found if isinstance(k, int)):
        row = found[m]
        print(f"\n{m} published key(s), {args.draws} draws")
        print(f"  false positives (watermarked)  {row['false_positive']}")
        print(f"  inconclusive                   {row['inconclusive']}")
        for corpus, (fp, inc) in row["per_corpus"].items():
            print(f"    {corpus:18s} fp {fp}   inconclusive {inc.rate:.3f}")
        for length, rate in row["power"].items():
            print(f"  power at {length:4d} tokens          {rate}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
