"""Measure keys' false-positive rates on human text (and their power where a model is
registered for their tokenizer), in this process, and store them like the Celery task does.

    manage.py keys_calibrate                 # every active key
    manage.py keys_calibrate KEY [KEY ...]   # by id or name
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from provenance.keys import calibration
from provenance.keys.models import KeyCalibration, WatermarkKey


class Command(BaseCommand):
    help = "Measure each key's false-positive rate per genre of human text and its power."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("keys", nargs="*", help="key ids or names (default: every active key)")
        parser.add_argument("--texts", type=int, default=None, help="human texts per genre")
        parser.add_argument(
            "--power-prompts", type=int, default=None, help="prompts per temperature (0: skip)"
        )
        parser.add_argument("--power-tokens", type=int, default=None, help="tokens per text")

    def handle(self, *args: Any, **options: Any) -> None:
        keys = _keys(options["keys"])
        for key in keys:
            start = time.monotonic()
            try:
                run = calibration.calibration_request(
                    key=key,
                    texts_per_genre=options["texts"],
                    power_prompts=options["power_prompts"],
                    power_tokens=options["power_tokens"],
                    publish_task=False,
                )
            except calibration.CalibrationError as exc:
                raise CommandError(str(exc)) from None
            calibration.calibration_run(str(run.id))
            run.refresh_from_db()
            self.stdout.write(_summary(key, run, time.monotonic() - start))


def _keys(names: list[str]) -> list[WatermarkKey]:
    rows = WatermarkKey.objects.select_related("tokenizer")
    if not names:
        found = list(rows.filter(status=WatermarkKey.Status.ACTIVE))
        if not found:
            raise CommandError("no active keys to calibrate")
        return found
    keys = []
    for name in names:
        try:
            match = rows.filter(id=uuid.UUID(name))
        except ValueError:
            match = rows.filter(name=name)
        if match.count() != 1:
            raise CommandError(f"{name!r} names {match.count()} keys; use the key's id")
        keys.append(match.get())
    return keys


def _summary(key: WatermarkKey, run: KeyCalibration, seconds: float) -> str:
    if run.status != KeyCalibration.Status.DONE:
        return f"{key.name} ({key.id}): {run.status}: {run.failure_reason}"
    lines = [f"{key.name} ({key.id}): threshold {run.threshold:g}, {seconds:.1f} s"]
    for rate in run.rates.all():
        warn = "  ABOVE THE THRESHOLD" if rate.above_threshold else ""
        lines.append(
            f"  {rate.genre:<10} {rate.flagged:>4}/{rate.texts:<4} = {rate.rate:.2%} "
            f"(95% CI {rate.ci_low:.2%}-{rate.ci_high:.2%}){warn}"
        )
        lines.append(f"             {rate.corpus}")
    for genre, r in run.assisted.get("genres", {}).items():
        warn = "  ABOVE THE THRESHOLD" if r["above_threshold"] else ""
        lines.append(
            f"  assisted {genre:<10} {r['flagged']:>4}/{r['texts']:<4} = {r['rate']:.2%} "
            f"(95% CI {r['ci_low']:.2%}-{r['ci_high']:.2%}){warn}"
        )
    if run.assisted.get("note"):
        lines.append(f"  model-assisted decision: {run.assisted['note']}")
    for label, entry in run.power.items():
        curve = ", ".join(f"{p['tokens']}: {p['detected']}/{p['texts']}" for p in entry["points"])
        lines.append(
            f"  power T={label} top-p {entry['top_p']}: tokens for 80% "
            f"{entry['tokens_needed']} (scored {entry['scored_tokens_needed']}); {curve}"
        )
    lines.append(f"  {run.power_note}")
    return "\n".join(lines)
