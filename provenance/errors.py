"""Errors that services raise for bad input; the message is safe to show to the caller.

``code`` is a stable, machine-readable name (the API answers it beside the English
``detail``); the message may be reworded, the code may not."""

from __future__ import annotations


class ProblemError(ValueError):
    status_code = 400
    default_code = "invalid"

    def __init__(self, message: str, status_code: int | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code
        self.code = code or self.default_code


class PayloadTooLarge(ProblemError):
    status_code = 413
    default_code = "too_large"


class Conflict(ProblemError):
    status_code = 409
    default_code = "conflict"
