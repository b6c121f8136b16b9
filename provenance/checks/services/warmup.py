"""Worker warm-up: tokenizers loaded before the first task needs them."""

from __future__ import annotations

import logging

from provenance.checks.scoring import ScoringError, tokenizer_load
from provenance.keys.models import Tokenizer

logger = logging.getLogger(__name__)


def tokenizers_warm() -> int:
    """Load every registered tokenizer into this process's cache; returns how many."""
    count = 0
    for tokenizer in Tokenizer.objects.all():
        try:
            tokenizer_load(tokenizer)
            count += 1
        except ScoringError as exc:
            logger.warning("%s", exc)
    logger.info("warmed %d tokenizer(s)", count)
    return count
