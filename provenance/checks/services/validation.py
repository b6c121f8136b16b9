"""Input checks shared by every way of submitting text: a refused input stores nothing."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils.translation import gettext

from provenance.accounts.models import Team
from provenance.accounts.selectors import team_for_user
from provenance.errors import PayloadTooLarge, ProblemError
from provenance.lib import archives, documents


def team_required(user: User) -> Team:
    team = team_for_user(user)
    if team is None:
        raise ProblemError(gettext("your account belongs to no team"), status_code=403)
    return team


def text_validate(text: Any, label: str = "text") -> str:
    """Reject what cannot be checked, with a message naming the problem."""
    if not isinstance(text, str):
        raise ProblemError(gettext("%(label)s must be a string") % {"label": label})
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        message = gettext("%(label)s is not valid UTF-8 (lone surrogate)") % {"label": label}
        raise ProblemError(message) from None
    if "\x00" in text:
        raise ProblemError(gettext("%(label)s contains a NUL character") % {"label": label})
    if not text.strip():
        raise ProblemError(gettext("%(label)s is empty") % {"label": label})
    limit = settings.PROVENANCE_MAX_TEXT_BYTES
    if size > limit:
        message = gettext("%(label)s is %(size)s bytes; the limit is %(limit)s bytes")
        raise PayloadTooLarge(message % {"label": label, "size": size, "limit": limit})
    return text


def audit_texts_validate(items: Any) -> list[tuple[str, str]]:
    """An audit's ``texts`` as (client_id, text) pairs; the message names the bad index."""
    if not isinstance(items, list) or not items:
        raise ProblemError("texts must be a non-empty list")
    limit = settings.PROVENANCE_MAX_AUDIT_TEXTS
    if len(items) > limit:
        raise PayloadTooLarge(f"an audit holds at most {limit} texts; got {len(items)}")
    cleaned = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "text" not in item:
            raise ProblemError(f"texts[{i}] must be an object with a 'text' field")
        client_id = item.get("client_id", "")
        if not isinstance(client_id, str) or len(client_id) > 200 or "\x00" in client_id:
            raise ProblemError(
                f"texts[{i}].client_id must be a string of at most 200 chars, without NUL"
            )
        cleaned.append((client_id, text_validate(item["text"], f"texts[{i}].text")))
    return cleaned


def document_limits() -> documents.Limits:
    return documents.Limits(
        max_bytes=settings.PROVENANCE_MAX_DOCUMENT_BYTES,
        max_pages=settings.PROVENANCE_MAX_DOCUMENT_PAGES,
        max_files=settings.PROVENANCE_MAX_AUDIT_TEXTS,
        max_archive_bytes=settings.PROVENANCE_MAX_ARCHIVE_BYTES,
        max_text_bytes=settings.PROVENANCE_MAX_TEXT_BYTES,
        max_seconds=settings.PROVENANCE_DOCUMENT_SECONDS,
        max_archive_seconds=settings.PROVENANCE_ARCHIVE_SECONDS,
    )


def document_problem(exc: documents.DocumentError) -> ProblemError:
    """A refused document as the 400/413 every surface answers (``document_<code>``)."""
    error_class = PayloadTooLarge if exc.too_large else ProblemError
    problem = error_class(exc.message, code=f"document_{exc.code}")
    problem.filename = exc.filename  # type: ignore[attr-defined]  # pages name it, localized
    return problem


def document_precheck(filename: str, size: int) -> str:
    """What the web process checks of an uploaded document before a worker reads it: its
    type by name and its size (``documents.precheck``); its name, or a 400/413."""
    try:
        return documents.precheck(filename, size, document_limits())[0]
    except documents.DocumentError as exc:
        raise document_problem(exc) from None


# Codes of refused uploads answered 413 (a limit); every other refusal is a 400.
_LIMIT_CODES = frozenset({"too_large"} | {f"document_{code}" for code in documents.TOO_LARGE})


def refusal_problem(code: str, message: str, filename: str = "") -> ProblemError:
    """A refusal a worker stored (a check's or an audit's ``failure_code`` and reason) as the
    problem the request would have answered: the same code, message and status."""
    error_class = PayloadTooLarge if code in _LIMIT_CODES else ProblemError
    problem = error_class(message, code=code)
    problem.filename = filename  # type: ignore[attr-defined]
    return problem


def document_extract(filename: str, content: bytes) -> documents.Document:
    """The text of an uploaded document, or a 400/413 naming the file and the reason."""
    try:
        return documents.extract(filename, content, document_limits())
    except documents.DocumentError as exc:
        raise document_problem(exc) from None


def archive_texts(content: bytes, deadline: float | None = None) -> list[dict[str, str]]:
    """An audit's ``texts`` from a zip of documents, each file's name as its client_id
    (``deadline``: the end of the upload's time budget, ``archives.extract_archive``)."""
    try:
        found = archives.extract_archive(content, document_limits(), deadline)
    except documents.DocumentError as exc:
        raise document_problem(exc) from None
    return [{"client_id": doc.filename, "text": doc.text} for doc in found]
