"""Worker warm-up: tokenizers (and the models that assist detection) loaded before the first
task needs them."""

from __future__ import annotations

import logging

from detector.text.tokenizers import Tokenizer as LoadedTokenizer
from provenance.keys.models import Tokenizer
from provenance.scoring.service import ScoringError, assist_budget, assist_for, tokenizer_load

logger = logging.getLogger(__name__)


def tokenizers_load() -> list[LoadedTokenizer]:
    """Load every registered tokenizer into this process's cache (one that cannot be loaded
    is logged and left to the request that needs it); returns those loaded."""
    loaded = []
    for tokenizer in Tokenizer.objects.all():
        try:
            loaded.append(tokenizer_load(tokenizer))
        except ScoringError as exc:
            logger.warning("%s", exc)
    return loaded


def tokenizers_warm() -> int:
    """Load every registered tokenizer into this process's cache; returns how many."""
    count = len(tokenizers_load())
    logger.info("warmed %d tokenizer(s)", count)
    if assist_budget() > 0:
        models = {t.model_path: t for t in Tokenizer.objects.exclude(model_path="")}
        loaded = sum(assist_for(t) is not None for t in models.values())
        logger.info("loaded %d assisting model(s)", loaded)
    return count
