"""Per-key false-positive dispersion on held-out human text, with and without the shipped
n-gram table.

For each genre (prose: standard-library docstrings; code: standard-library modules; templated:
dpkg status and APT ``Packages`` stanzas of held-out packages; none of them a source of the
table, see benchmarks/dispersion.py), 250-token chunks are tested under many random keys at
alpha 1%. Under independent tests the per-key flag count is binomial (variance / mean about 1);
texts that share (context, token) pairs make it over-dispersed, so some keys flag far more than
alpha. "shipped" skips the pairs of the tokenizer's shipped table (detector.text.ngrams), as the
default decision does.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_dispersion.py [--keys 60] [--chunks 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks.dispersion import chunks, dispersion, flag_counts, genre_documents
from detector.text.tokenizers import load_tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    tok = load_tokenizer()
    table = tok.ngram_table
    keys = np.random.default_rng(options.seed).integers(1, 2**63, options.keys)
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {options.keys} keys, alpha 1%, 250-token chunks")
    print(f"table: {table and table.meta}")
    print(
        f"{'genre':10s} {'filter':8s} {'chunks':>6s} {'scored':>6s} {'rate':>7s} "
        f"{'var/mean':>8s} {'max key':>8s}"
    )
    for genre, docs in genre_documents().items():
        test_chunks = chunks([tok.encode(d) for d in docs], 250, options.chunks)
        for label, t in (("none", None), ("shipped", table)):
            counts, scored = flag_counts(test_chunks, keys, t)
            n = len(test_chunks)
            print(
                f"{genre:10s} {label:8s} {n:6d} {scored:6.0f} {counts.mean() / n:7.4f} "
                f"{dispersion(counts):8.2f} {counts.max() / n:8.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
