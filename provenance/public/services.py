"""Public verification's writes: publishing keys, partners, and the check itself.

A public check is tested against every published key at once through the product's one
decision (``provenance.scoring.service.score_texts``: ``detector.decision.decide.decide_many``, Holm
over every published key); the answer holds the verdict, the model it names, a strength in
a few wide bands, the tokens scored and a signed receipt, nothing more (docs/public.md).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from detector.decision import combined, rule
from detector.reports import receipt
from detector.reports.signed import text_sha256
from provenance.checks.services.validation import (
    document_extract,
    document_precheck,
    text_validate,
)
from provenance.errors import Conflict, ProblemError
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import prepare_keys
from provenance.lib.crypto import decrypt_bytes
from provenance.public import budgets, families, peers, proof_of_work
from provenance.public.models import Partner, PartnerUsage
from provenance.public.selectors import key_sha256, published_key_list
from provenance.public.stores import public_cache
from provenance.reports.models import SigningKey
from provenance.reports.services import signing_key_active
from provenance.scoring.service import KeyGroup, ScoringError, score_texts

ANSWER_TTL_S = 86400  # the same text asked again within a day gets the same decision
INCONCLUSIVE, WATERMARKED = "inconclusive", "watermarked"


@sensitive_variables("key")
def partner_create(*, name: str, per_minute: int | None = None) -> tuple[Partner, str]:
    """A partner and its key (returned once; only its SHA-256 is stored)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise ProblemError("a partner's name is 1 to 200 characters")
    if Partner.objects.filter(name=name).exists():
        raise Conflict(f"a partner named {name!r} exists")
    key = "pvp_" + secrets.token_urlsafe(32)
    partner = Partner.objects.create(name=name, key_sha256=key_sha256(key), per_minute=per_minute)
    return partner, key


def partner_revoke(*, partner: Partner) -> Partner:
    partner.revoked_at = partner.revoked_at or timezone.now()
    partner.save(update_fields=["revoked_at"])
    return partner


def usage_log(partner: Partner, status_code: int, text: Any, verdict: str = "") -> None:
    digest = text_sha256(text) if isinstance(text, str) and _encodable(text) else ""
    PartnerUsage.objects.create(
        partner=partner, status_code=status_code, text_sha256=digest, verdict=verdict
    )


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass(frozen=True)
class Caller:
    """Who asks: a partner, or an anonymous address with its proof of work."""

    address: str
    partner: Partner | None = None
    proof: Any = None

    @property
    def requester(self) -> str:
        """The caller as budgets and the scrubbing guard count it (budgets.requester)."""
        return budgets.requester(self.address, self.partner)

    @property
    def prefixes(self) -> list[tuple[str, float, float]]:
        """The IPv6 prefixes around the caller the scrubbing guard counts too
        (budgets.guard_prefixes)."""
        return budgets.guard_prefixes(self.address, self.partner)


def admit(caller: Caller) -> None:
    """The caller's proof of work (anonymous) and budget: before anything of the body is
    read (the API calls it on the headers alone where it can). An anonymous caller spends
    its own address's budget here, and the shared ones (``shared_spend``) only once its body
    holds something to check."""
    if caller.partner is not None:
        budgets.partner_spend(caller.partner)
    else:
        proof_of_work.solution_accept(caller.proof)
        budgets.anonymous_spend(caller.address)


def shared_spend(caller: Caller) -> None:
    """An anonymous caller's prefixes and the global budget (``budgets``), once its body
    passed: an empty or malformed one spends nothing beyond its own address."""
    if caller.partner is None:
        budgets.anonymous_shared_spend(caller.address)


def verify(
    *,
    caller: Caller,
    text: Any,
    document: tuple[str, bytes] | None = None,
    ask_peers: bool = True,
    admitted: bool = False,
) -> dict[str, Any]:
    """A public check of ``text`` or of a ``document`` (its name and bytes, extracted as the
    private API does) for ``caller``: the caller's proof of work and budget first (``admit``;
    ``admitted``: already done), then the answer. With peers configured (and ``ask_peers``),
    the answer also holds one line per peer (``provenance.public.peers``) and the combined
    claim across organizations (``detector.decision.combined.combine``); the local fields
    stay the local answer's. Peers are asked only once this server's own checks passed (proof
    of work, budget, a valid text of the public minimum, the scrubbing guard), and a peer's
    proof of work is solved only for a partner's check. An anonymous caller's shared budgets
    are spent once the body holds a text (or a document of an accepted type and size) to
    check."""
    if not admitted:
        admit(caller)
    if document is not None:
        if text is not None:
            raise ProblemError("send exactly one of text and file")
        document_precheck(document[0], len(document[1]))
        shared_spend(caller)  # before the document is read: the reading is what it prices
        text = text_validate(document_read(*document))
        local = LocalCheck(text, caller)  # the minimum and the guard first: they may refuse
    else:
        # A text under the public minimum (its words, then its tokens) spends nothing shared:
        # the shared budgets are spent between the minimum and the guard.
        text = text_validate(text)
        local = LocalCheck(text, caller, spend=lambda: shared_spend(caller))
    if not ask_peers or not settings.PROVENANCE_PUBLIC_PEERS:
        return local.answer()
    fanout = peers.ask_all(text, solve=caller.partner is not None, requester=caller.requester)
    answer = local.answer()  # the peers work while the local test runs
    lines = fanout.lines()
    local_line = {"organization": settings.PROVENANCE_PUBLIC_ORGANIZATION, "status": "answered"}
    claim = combined.combine([{**answer, **local_line}, *lines], settings.PROVENANCE_THRESHOLD)
    return {**answer, "peers": lines, "combined": claim}


class ExtractionBusy(ProblemError):
    """Every slot for reading public documents in this process is taken: 503, Retry-After."""

    status_code = 503
    default_code = "document_busy"
    retry_after = 5


# Public verification answers at once with a signed receipt and stores nothing (no account,
# no row a client could poll), so its documents are read in the request, unlike the private
# API's: at most PROVENANCE_PUBLIC_DOCUMENT_SLOTS at a time in one web process, each within
# the document time limit; one more is answered 503 with Retry-After at once, so slow
# documents cannot take every web thread.
EXTRACTIONS = threading.BoundedSemaphore(settings.PROVENANCE_PUBLIC_DOCUMENT_SLOTS)


def document_read(filename: str, content: bytes) -> str:
    """The text of a public document: its type and size checked first (no slot taken),
    then read in one of the process's slots, or refused with 503 when none is free."""
    document_precheck(filename, len(content))
    if not EXTRACTIONS.acquire(blocking=False):
        raise ExtractionBusy("too many documents are being read; try again in a few seconds")
    try:
        return document_extract(filename, content).text
    finally:
        EXTRACTIONS.release()


class LocalCheck:
    """This server's answer for a valid text, in two steps: made, the text has passed the
    public minimum (``public_minimum``: 400 ``too_short`` otherwise, before any scoring) and
    the scrubbing guard for the caller (``families.guard``); ``answer()`` then decides it
    (or reads the decision cached for the same text, the same published keys and the same
    requester) and signs a receipt of its own: this request's time, this server's active
    signing key. Neither a receipt nor another requester's decision is served: an answer
    read from another's decision would come sooner than one decided, and tell that, and
    when, someone else asked. ``spend``: called once the text is of the public minimum,
    before the guard counts it (an anonymous caller's shared budgets)."""

    def __init__(self, text: str, caller: Caller, spend: Callable[[], None] | None = None) -> None:
        families.public_minimum(text)  # no key read, nothing tokenized for a text too short
        self.text = text
        self.keys = published_key_list()
        if not self.keys:
            raise ProblemError("no model is published for public verification", status_code=503)
        self.digest = text_sha256(text)
        keys = _keys_hash(self.keys)  # the decision is the requester's own (see above)
        self.cache_key = f"public:decision:{caller.requester}:{self.digest}:{keys}"
        cached = public_cache().get(self.cache_key)
        self.decided = Decided(**cached) if cached is not None else None
        self.groups: list[KeyGroup] = []
        if self.decided is None:
            try:
                self.groups = prepare_keys(self.keys)
            except ScoringError:
                raise ProblemError("public verification is unavailable", status_code=503) from None
            if too_short(text, self.groups):
                raise families.TooShort(f"fewer than {rule.MIN_TOKENS} tokens")
        if spend is not None:
            spend()
        families.guard(text, self.digest, caller.requester, max_texts(caller), caller.prefixes)

    def answer(self) -> dict[str, Any]:
        if self.decided is None:
            (self.decided,) = decisions(
                [self.text], self.groups, threshold=settings.PROVENANCE_THRESHOLD, short=[False]
            )
            public_cache().set(self.cache_key, asdict(self.decided), ANSWER_TTL_S)
        with transaction.atomic():
            signer = signing_key_active()
        return _answer(self.digest, self.keys, self.decided, signer)


def max_texts(caller: Caller) -> int:
    """The most distinct texts answered to ``caller`` within the guard's window."""
    if caller.partner is not None:
        return int(settings.PROVENANCE_PUBLIC_PARTNER_MAX_TEXTS)
    return int(settings.PROVENANCE_PUBLIC_MAX_TEXTS)


def answer_for(text: str, caller: Caller | None = None) -> dict[str, Any]:
    """The local answer for a valid text (``LocalCheck``) to ``caller`` (by default one
    anonymous address), already admitted, no peer asked."""
    return LocalCheck(text, caller or Caller(address="")).answer()


@dataclass(frozen=True)
class Decided:
    """What a public answer says of a text, before it is signed."""

    verdict: str
    model: str | None  # the public name of the key the watermark points to, when watermarked
    strength: int | None  # the band of the family's corrected p-value, when watermarked
    tokens_scored: int


def too_short(text: str, groups: list[KeyGroup]) -> bool:
    """Too short to test under every published tokenizer, by the decision's own minimum
    (``detector.decision.rule.too_short``): refused with the public minimum's error."""
    return rule.too_short(len(g.loaded.encode_lazy(text)[0]) for g in groups)


def decisions(
    texts: list[str],
    groups: list[KeyGroup],
    *,
    threshold: float,
    short: list[bool] | None = None,
) -> list[Decided]:
    """The public decision of each text against every key of ``groups`` (the product's one
    decision, ``score_texts``: Holm over all of them), coarsened as the answer shows it; a
    text ``too_short`` is inconclusive untested (``short``: those flags when the caller has
    them already, so no text is tokenized for them twice). ``benchmarks/bench_public.py``
    measures it."""
    if short is None:
        short = [too_short(t, groups) for t in texts]
    tested = [t for t, s in zip(texts, short, strict=True) if not s]
    results = iter(score_texts(tested, groups, threshold=threshold) if tested else [])
    out = []
    for is_short in short:
        if is_short:
            out.append(Decided(INCONCLUSIVE, None, None, 0))
            continue
        result = next(results)
        best = None if result.best is None else result.hypotheses[result.best]
        marked = result.verdict == WATERMARKED and best is not None
        out.append(
            Decided(
                result.verdict,
                best.key.public_name if marked and best else None,
                combined.strength_band(result.log10_p) if marked else None,
                best.detection.num_scored_tokens if best else 0,
            )
        )
    return out


def _keys_hash(keys: list[WatermarkKey]) -> str:
    names = json.dumps([[str(k.pk), k.public_name] for k in keys])
    return hashlib.sha256(names.encode()).hexdigest()[:16]


def _answer(
    digest: str, keys: list[WatermarkKey], decided: Decided, signer: SigningKey
) -> dict[str, Any]:
    payload = {
        "issuer": settings.PROVENANCE_PUBLIC_ORGANIZATION,
        "text": {"sha256": digest},
        "verdict": decided.verdict,
        "model": decided.model,
        "strength": decided.strength,
        "tokens_scored": decided.tokens_scored,
        "models": [k.public_name for k in keys],
        "at": timezone.now().isoformat(),
    }
    body = {k: payload[k] for k in ("verdict", "model", "strength", "tokens_scored")}
    return {**body, "receipt": receipt_sign(payload, signer)}


@sensitive_variables("private")
def receipt_sign(payload: dict[str, Any], signer: SigningKey | None = None) -> str:
    if signer is None:
        with transaction.atomic():
            signer = signing_key_active()
    private = json.loads(decrypt_bytes(signer.encrypted_private))
    return receipt.sign_receipt(payload, private)
