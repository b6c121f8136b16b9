"""The registry has no background work: keys are decrypted where they are used (the
scoring tasks in provenance.checks.tasks). Kept so every app has the same skeleton."""

from __future__ import annotations
