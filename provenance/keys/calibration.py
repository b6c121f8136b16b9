"""Calibrating a key: its realized false-positive rate on human text, and its power.

A fixed key gives each (context, token) pair a fixed score, so on text of one kind its
p-values are correlated and its false-positive rate may differ from the threshold's promise.
This measures it: every chunk of three human genres (``detector.text.corpora``) is
checked under the key alone with the web's own decision (``provenance.scoring.service``, the
function a check with this one key runs), so any change to the default decision is measured
as deployed. Where the key's tokenizer has a model, the generator writes watermarked text with
the key at T=1 and T=0.7 (top-p 0.9) and the same decision on its prefixes gives the power
curve and the tokens needed for 80% power.

A calibration is a job row (``KeyCalibration``) owned by the task ``provenance.keys.calibrate``,
which carries only the row's id; the key is decrypted inside the worker.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from detector.evidence.calibration import PowerPoint, Rate, clopper_pearson, tokens_needed
from detector.text.corpora import CHUNK_TOKENS, GENRES, corpus
from provenance.celery import publish
from provenance.keys.models import GenreRate, KeyCalibration, Tokenizer, WatermarkKey
from provenance.keys.selectors import open_calibrations, prepare_keys
from provenance.scoring.service import (
    KeyGroup,
    ScoringError,
    assist_budget,
    assist_for,
    model_dir_of,
    score_texts,
)

logger = logging.getLogger(__name__)

CALIBRATE = "provenance.keys.calibrate"

# (label, temperature, top-p): the two settings the power curve is measured at.
POWER_SETTINGS = (("1.0", 1.0, 1.0), ("0.7", 0.7, 0.9))
# Prefix lengths (generated tokens) the power curve is measured at, up to power_tokens.
POWER_LENGTHS = (10, 25, 50, 75, 100, 150, 200, 300, 400, 600, 800)
# Requests written for the power curve: prose and code, the high- and the low-entropy kind.
POWER_PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a Python function that merges two sorted lists, with a docstring and tests.",
    "Explain how vaccines train the immune system, for a curious teenager.",
    "Write a JavaScript function that debounces another function, and explain it.",
    "Describe a busy market in a coastal town at dawn.",
    "Write a SQL query that lists each customer's three most recent orders, and explain it.",
    "Write a letter to a friend about a journey by night train across the mountains.",
    "Write a bash script that backs up a directory into a dated tar.gz archive.",
)


class CalibrationError(Exception):
    """A calibration cannot be requested; the message is safe to show."""


def calibration_request(
    *,
    key: WatermarkKey,
    requested_by: User | None = None,
    texts_per_genre: int | None = None,
    power_prompts: int | None = None,
    power_tokens: int | None = None,
    publish_task: bool = True,
) -> KeyCalibration:
    """Store a pending calibration of ``key`` and queue it for a worker (after commit).

    Sizes default to the ``PROVENANCE_CALIBRATION_*`` settings; ``power_prompts=0`` skips the
    power measurement."""
    texts = settings.PROVENANCE_CALIBRATION_TEXTS if texts_per_genre is None else texts_per_genre
    prompts = (
        settings.PROVENANCE_CALIBRATION_POWER_PROMPTS if power_prompts is None else power_prompts
    )
    tokens = settings.PROVENANCE_CALIBRATION_POWER_TOKENS if power_tokens is None else power_tokens
    if texts < 1 or not 0 <= prompts <= len(POWER_PROMPTS) or tokens < POWER_LENGTHS[0]:
        raise CalibrationError(
            f"texts per genre >= 1, power prompts 0..{len(POWER_PROMPTS)}, "
            f"power tokens >= {POWER_LENGTHS[0]}"
        )
    lost = KeyCalibration.objects.filter(
        key=key, status__in=[KeyCalibration.Status.PENDING, KeyCalibration.Status.RUNNING]
    ).exclude(id__in=open_calibrations().values("id"))
    lost.update(
        status=KeyCalibration.Status.FAILED,
        failure_reason="lost: not finished within the task's time limit",
        finished_at=timezone.now(),
    )
    run = KeyCalibration.objects.create(
        key=key,
        threshold=settings.PROVENANCE_THRESHOLD,
        texts_per_genre=texts,
        chunk_tokens=CHUNK_TOKENS,
        power_prompts=prompts,
        power_tokens=tokens,
        requested_by=requested_by,
    )
    if publish_task:
        run_id = str(run.id)
        transaction.on_commit(lambda: publish(CALIBRATE, run_id))
    return run


def calibration_run(calibration_id: str) -> KeyCalibration | None:
    """Measure a pending calibration (the task's body; runnable in-process too). A row that is
    not pending (done, failed, or taken by another delivery) is left alone: None."""
    now = timezone.now()
    claimed = KeyCalibration.objects.filter(
        id=calibration_id, status=KeyCalibration.Status.PENDING
    ).update(status=KeyCalibration.Status.RUNNING, started_at=now)
    if not claimed:
        return None
    run = KeyCalibration.objects.select_related("key__tokenizer").get(id=calibration_id)
    try:
        groups = prepare_keys([run.key])  # decrypts: the value stays in this worker
        rates = measure_rates(groups, run.threshold, run.texts_per_genre, run.chunk_tokens)
        assisted = measure_assisted(groups, run)
        power, note = measure_power(groups, run)
    except ScoringError as exc:
        calibration_fail(calibration_id, str(exc))
        return None
    return _store(run, rates, power, note, assisted)


@dataclass(frozen=True)
class GenreMeasurement:
    genre: str
    corpus: str
    rate: Rate


def measure_rates(
    groups: list[KeyGroup], threshold: float, texts_per_genre: int, chunk_tokens: int
) -> list[GenreMeasurement]:
    """Each genre's chunks checked under the key with the web's decision; the flagged share
    with its 95% Clopper-Pearson interval."""
    out = []
    for genre in GENRES:
        human = corpus(groups[0].loaded, genre, texts_per_genre, chunk_tokens)
        results = score_texts(list(human.texts), groups, threshold=threshold)
        flagged = sum(bool(result.is_watermarked) for result in results)
        out.append(
            GenreMeasurement(genre, human.description, clopper_pearson(flagged, len(results)))
        )
    return out


def measure_assisted(groups: list[KeyGroup], run: KeyCalibration) -> dict[str, Any]:
    """The model-assisted decision's false-positive rate, when the workers use it: each
    genre's ``PROVENANCE_CALIBRATION_ASSIST_TEXTS`` chunks (at most the run's texts; spread
    over the genre like the model-free sample) checked with ``score_texts(reading="read")``
    (the adaptive decision: read where the model-free stage leaves a chunk undecided), in
    batches within the task's model budget so that the model reads every one. The sample is
    bounded because the model reads each token (about 30 tokens/s on a loaded CPU core):
    its interval is wider than the model-free one."""
    budget = assist_budget()
    wanted = min(settings.PROVENANCE_CALIBRATION_ASSIST_TEXTS, run.texts_per_genre)
    if budget == 0:
        return {"note": "model assistance is off (PROVENANCE_MODEL_ASSIST)"}
    if wanted == 0:  # before the model is loaded: a run that reads nothing loads nothing
        return {"note": "not requested (PROVENANCE_CALIBRATION_ASSIST_TEXTS=0)"}
    if assist_for(groups[0].tokenizer) is None:
        return {"note": "no model is registered for the key's tokenizer"}
    per_batch = max(1, budget // run.chunk_tokens)
    genres = {}
    for genre in GENRES:
        texts = list(corpus(groups[0].loaded, genre, wanted, run.chunk_tokens).texts)
        results = []
        for start in range(0, len(texts), per_batch):
            batch = texts[start : start + per_batch]
            results += score_texts(batch, groups, threshold=run.threshold, reading="read")
        # the adaptive decision as the workers make it: read where the model-free stage left
        # the chunk undecided; a chunk due a reading the budget did not allow is left out
        read = [r for r in results if r.reading != "skipped"]
        rate = clopper_pearson(sum(bool(r.is_watermarked) for r in read), len(read))
        genres[genre] = {
            "texts": rate.texts,
            "flagged": rate.flagged,
            "rate": rate.rate,
            "ci_low": rate.low,
            "ci_high": rate.high,
            "above_threshold": rate.above(run.threshold),
        }
    return {"genres": genres, "note": f"{wanted} chunks per genre read by the model"}


def model_for(tokenizer: Tokenizer) -> str | None:
    """The directory of the model registered for a tokenizer (``Tokenizer.model_path``; the
    converted embedded SmolLM2 for the embedded tokenizer), or None."""
    return str(model_dir_of(tokenizer.model_path)) if tokenizer.model_path else None


def measure_power(groups: list[KeyGroup], run: KeyCalibration) -> tuple[dict[str, Any], str]:
    """(power per temperature, a note). Texts are written by the transformers generator with
    the key (``power_prompts`` requests of ``power_tokens`` tokens each, decoding on past an
    end-of-text token so every text has every length); each prefix is decoded to text and
    checked like a human chunk."""
    model = model_for(run.key.tokenizer)
    if run.power_prompts == 0:
        return {}, "power not measured (no prompts requested)"
    if model is None:
        return {}, "power not measured: no model is registered for this key's tokenizer"
    backend = _backend(groups[0], model)
    lengths = [n for n in POWER_LENGTHS if n <= run.power_tokens]
    power: dict[str, Any] = {}
    for label, temperature, top_p in POWER_SETTINGS:
        ids = _generate(backend, run.power_prompts, run.power_tokens, temperature, top_p)
        points, scored = _curve(groups, ids, lengths, run.threshold)
        needed = tokens_needed(points)
        power[label] = {
            "temperature": temperature,
            "top_p": top_p,
            "points": [
                {"tokens": p.tokens, "texts": p.texts, "detected": p.detected, "scored": s}
                for p, s in zip(points, scored, strict=True)
            ],
            "tokens_needed": needed,
            "scored_tokens_needed": None if needed is None else scored[lengths.index(needed)],
        }
    return power, f"measured with {backend.model_name} (transformers backend)"


def _backend(group: KeyGroup, model: str) -> Any:
    from generator.config import KeyStore
    from generator.hf import TransformersBackend

    store = KeyStore({"calibration": group.configs[0]})
    return TransformersBackend(store, model=model, default_key="calibration")


def _generate(
    backend: Any, prompts: int, tokens: int, temperature: float, top_p: float
) -> list[list[int]]:
    from generator.core import SamplingSettings
    from generator.types import GenerationRequest

    requests = [
        GenerationRequest(
            messages=({"role": "user", "content": prompt},),
            max_tokens=tokens,
            sampling=SamplingSettings(temperature=temperature, top_p=top_p),
            seed=i,
            ignore_eos=True,
        )
        for i, prompt in enumerate(POWER_PROMPTS[:prompts])
    ]
    return [list(g.token_ids) for g in backend.generate(requests)]


def _curve(
    groups: list[KeyGroup], ids: list[list[int]], lengths: list[int], threshold: float
) -> tuple[list[PowerPoint], list[int]]:
    """Per length: the detected share of the prefixes, and their median scored tokens."""
    loaded = groups[0].loaded
    points, scored = [], []
    for n in lengths:
        texts = [loaded.decode(row[:n]) for row in ids]
        results = score_texts(texts, groups, threshold=threshold)
        detected = sum(bool(r.is_watermarked) for r in results)
        counts = sorted(r.hypotheses[0].detection.num_scored_tokens for r in results)
        points.append(PowerPoint(tokens=n, texts=len(texts), detected=detected))
        scored.append(int(counts[len(counts) // 2]))
    return points, scored


@transaction.atomic
def _store(
    run: KeyCalibration,
    rates: list[GenreMeasurement],
    power: dict[str, Any],
    note: str,
    assisted: dict[str, Any],
) -> KeyCalibration | None:
    locked = KeyCalibration.objects.select_for_update().filter(
        id=run.id, status=KeyCalibration.Status.RUNNING
    )
    if not locked.exists():  # failed meanwhile (time limit): keep what it says
        return None
    GenreRate.objects.bulk_create(
        GenreRate(
            calibration=run,
            genre=m.genre,
            corpus=m.corpus[:300],
            texts=m.rate.texts,
            flagged=m.rate.flagged,
            rate=m.rate.rate,
            ci_low=m.rate.low,
            ci_high=m.rate.high,
            above_threshold=m.rate.above(run.threshold),
        )
        for m in rates
    )
    run.power, run.power_note, run.assisted = power, note[:300], assisted
    run.status, run.finished_at = KeyCalibration.Status.DONE, timezone.now()
    run.save(update_fields=["power", "power_note", "assisted", "status", "finished_at"])
    logger.info("calibration %s of key %s done", run.id, run.key_id)
    return run


def calibration_fail(calibration_id: str, reason: str) -> None:
    """Mark an unfinished calibration failed with a reason that is safe to show."""
    KeyCalibration.objects.filter(
        id=calibration_id,
        status__in=[KeyCalibration.Status.PENDING, KeyCalibration.Status.RUNNING],
    ).update(
        status=KeyCalibration.Status.FAILED,
        failure_reason=reason[:300],
        finished_at=timezone.now(),
    )
