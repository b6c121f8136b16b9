"""Errors that services raise for bad input; the message is safe to show to the caller."""

from __future__ import annotations


class ProblemError(ValueError):
    status_code = 400

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code


class PayloadTooLarge(ProblemError):
    status_code = 413


class Conflict(ProblemError):
    status_code = 409
