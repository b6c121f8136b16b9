"""Edits and mixed documents on the real generator: SmolLM2-135M on vLLM with our processor.

Generates once (under the vLLM lock) and caches every text in
``$PROVENANCE_DATA_DIR/robustness/generations.json``; later runs only detect. For creative and
code prompts at T=1 and at T=0.7/top-p 0.9 (``--prompts`` per cell, 200 tokens each):

1. Edits: 10/20/30% random token substitutions, insertions and deletions (replacement tokens
   drawn from real prose), and a paraphrase of each text by the same model without
   watermark. Detection rate at p <= 0.01 of the global test and of the localized decision
   (``detector.evidence.localize``: global test and span scan, Bonferroni).
2. Mixed documents: the first 120 tokens of each text inside ~1,200 human tokens of prose.
   Rates of the 120 tokens tested alone, of the global test on the document and of the
   localized decision on it (target: localized >= 0.8x alone).
3. False positives in the same run: unwatermarked generations of the same prompts (all edit
   kinds too) and human-only documents of prose, under the same key.
4. ``--oracle``: beside the edit tables, tests that know which scored tokens are intact (the
   token and its w context tokens unedited, from the edit's record): Gamma, the weighted
   test with the product's reading of the unedited text and with the sampling distribution
   (the prompt, temperature and top-p), and the Neyman-Pearson likelihood ratio at the
   drawn token's sampling probability. Not deployable: they bound what a statistic that
   cannot recover edited contexts can reach.
5. ``--masked RATE``: at RATE substitutions, the deployable tests, the oracle and tests on
   the tokens that no suspected edit (a token the model reads below a probability TAU)
   touches, on a development and a held-out half of the prompts.

Run: ``flock /tmp/provenance-vllm.lock python benchmarks/bench_robustness.py [--prompts 12]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.robustness.columns import human_fpr  # noqa: E402
from benchmarks.robustness.common import (  # noqa: E402
    ASSISTED_COLUMNS,
    BASE_COLUMNS,
    CELLS,
    HUMAN_AROUND,
    KINDS,
    ORACLE_COLUMNS,
    PLANT,
    RATES,
    RUN,
    THRESHOLD,
    TOKENS,
)
from benchmarks.robustness.generation import cache_path, generate  # noqa: E402
from benchmarks.robustness.masked import masked_table  # noqa: E402
from benchmarks.robustness.tables import edit_table, planted_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12, help="prompts per cell")
    parser.add_argument(
        "--generate-only",
        type=int,
        metavar="CELLS",
        help="generate at most CELLS missing cells (under the vLLM lock) and stop",
    )
    parser.add_argument(
        "--edit-draws", type=int, default=1, help="independent edits of every text per rate"
    )
    parser.add_argument(
        "--human-keys", type=int, default=5, help="keys for the human-only FPR (each piece)"
    )
    parser.add_argument(
        "--human-docs", type=int, default=200, help="disjoint human-only pieces for the FPR"
    )
    parser.add_argument(
        "--human-tokens", type=int, default=HUMAN_AROUND, help="tokens per human-only piece"
    )
    parser.add_argument(
        "--plain-draws",
        type=int,
        help="independent edits of every unwatermarked text per rate (default: --edit-draws)",
    )
    parser.add_argument(
        "--no-planted", action="store_true", help="skip the mixed documents (edits only)"
    )
    parser.add_argument(
        "--no-edits", action="store_true", help="skip the edit tables (mixed documents only)"
    )
    parser.add_argument(
        "--rates", type=float, action="append", help="only this edit rate (repeatable)"
    )
    parser.add_argument("--no-clean", action="store_true", help="skip the unedited texts")
    parser.add_argument(
        "--no-paraphrase",
        action="store_true",
        help="with --generate-only: generate no paraphrases (the edits only)",
    )
    parser.add_argument(
        "--cells",
        action="append",
        choices=CELLS,
        help="only this cell (repeatable; default: all four)",
    )
    parser.add_argument(
        "--kinds",
        action="append",
        choices=KINDS,
        help="only this edit kind (repeatable; default: all three)",
    )
    parser.add_argument(
        "--assist",
        action="store_true",
        help="add the model-assisted columns (SmolLM2 reads every text once)",
    )
    parser.add_argument(
        "--masked",
        type=float,
        metavar="RATE",
        help="only the comparison at RATE substitutions of the deployable tests, the oracle "
        "and the suspected-edit tests (development and held-out halves of the prompts; "
        "SmolLM2 reads every edited text once)",
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="add the oracle columns of the edit tables (they know which tokens are intact; "
        "SmolLM2 reads every unedited text twice)",
    )
    args = parser.parse_args()
    if args.generate_only is not None:
        generate(args.prompts, args.generate_only, args.cells, not args.no_paraphrase)
        return
    from benchmarks.corpus import english_prose
    from detector.text.tokenizers import load_tokenizer

    data = generate(args.prompts, only=args.cells)
    tok = load_tokenizer("default")
    if args.assist:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        RUN.columns = BASE_COLUMNS + ASSISTED_COLUMNS
        RUN.assist, RUN.cache = ModelAssist(embedded_model_dir()), {}
    if args.oracle:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        RUN.oracle = ORACLE_COLUMNS
        RUN.oracle_model = RUN.assist or ModelAssist(embedded_model_dir())
    human = tok.encode(english_prose())
    if args.masked is not None:
        from detector.reading.model import ModelAssist
        from generator.models import embedded_model_dir

        RUN.oracle_model = ModelAssist(embedded_model_dir())
        rows = masked_table(
            data["cells"],
            human,
            human,
            args.edit_draws,
            args.masked,
            args.human_docs,
            args.human_keys,
        )
        cache_path().with_name(f"masked-{int(args.masked * 100)}.json").write_text(json.dumps(rows))
        return
    print(f"\n{args.prompts} prompts per cell, {TOKENS} tokens, key fixed, threshold {THRESHOLD}")
    head = " | ".join(f"{c} %" for c in RUN.columns)
    fpr_head = " | ".join(f"FPR {c} %" for c in RUN.columns)
    rule = "| --- " * (3 + 2 * len(RUN.columns)) + "|"
    # Human prose first: the false-positive rates are the figures the others are read against.
    n, fpr = 0, (float("nan"),) * len(RUN.columns)
    if args.human_docs:
        n, fpr = human_fpr(human, args.human_docs, args.human_keys, args.human_tokens)
        print(f"\nhuman prose, {n} tests ({args.human_keys} keys) of {args.human_tokens} tokens:")
        print(", ".join(f"FPR {c} {100 * v:.1f}%" for c, v in zip(RUN.columns, fpr, strict=True)))
    edit_head = " | ".join(f"{c} %" for c in RUN.columns + RUN.oracle)
    edit_fpr_head = " | ".join(f"FPR {c} %" for c in RUN.columns + RUN.oracle)
    edit_rule = "| --- " * (3 + 2 * len(RUN.columns + RUN.oracle)) + "|"
    print(f"\n| cell | edit | n | {edit_head} | {edit_fpr_head} |\n{edit_rule}")
    kinds = tuple(args.kinds or KINDS)
    edits = (
        []
        if args.no_edits
        else edit_table(
            data["cells"],
            human,
            tok,
            args.edit_draws,
            kinds,
            args.plain_draws,
            tuple(args.rates or RATES),
            not args.no_clean,
        )
    )
    planted: list[dict[str, Any]] = []
    if not args.no_planted:
        print(f"\n| cell | n | {PLANT} alone % | {head} (in document) | {fpr_head} |\n| --- {rule}")
        planted = planted_table(data["cells"], human)
    out = cache_path().with_name("results.json")
    out.write_text(json.dumps({"edits": edits, "planted": planted, "human": [n, *fpr]}))


if __name__ == "__main__":
    main()
