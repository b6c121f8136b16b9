"""The product's own settings (``PROVENANCE_*``), read from the environment once at start;
``provenance.settings`` takes them all. Each is described in docs/operations.md."""

from __future__ import annotations

import os
import re

from detector.core.config import DEFAULT_THRESHOLD as _DEFAULT_THRESHOLD  # not a setting
from provenance.env import env_bool, env_float, env_int, env_list, env_str

# Key-encryption key (urlsafe base64, 32 bytes, as from Fernet.generate_key()). Unset: the
# embedded default generates one into DATA_DIR on first use (provenance.keys.crypto).
PROVENANCE_KEK = env_str("PROVENANCE_KEK", "")
PROVENANCE_MAX_TEXT_BYTES = env_int("PROVENANCE_MAX_TEXT_BYTES", 200 * 1024, minimum=1)
# POST /api/v1/checks?wait=N: texts up to this size are scored in the request itself (same
# code as the worker, about 1 ms a 200-token text); larger ones go through the queue and the
# request waits for their verdict at most N seconds, N at most PROVENANCE_MAX_WAIT. 0: never
# inline.
PROVENANCE_INLINE_MAX_BYTES = env_int("PROVENANCE_INLINE_MAX_BYTES", 16 * 1024, minimum=0)
PROVENANCE_MAX_WAIT = env_int("PROVENANCE_MAX_WAIT", 30, minimum=0)
# Requests of one user that may wait at once (?wait=): more are answered 202 at once, to be
# polled, so one account cannot hold every web thread.
PROVENANCE_MAX_WAITING_PER_USER = env_int("PROVENANCE_MAX_WAITING_PER_USER", 2, minimum=1)
# Tokens one streaming-detection stream may take (its seen contexts are stored with it).
PROVENANCE_STREAM_MAX_TOKENS = env_int("PROVENANCE_STREAM_MAX_TOKENS", 20_000, minimum=1)
# Characters a text stream may hold pending (its last word, not yet scored): a real word is
# far shorter; longer pending text (no word boundary) is scored as it stands, not re-read on
# every append.
PROVENANCE_STREAM_MAX_PENDING = env_int("PROVENANCE_STREAM_MAX_PENDING", 1024, minimum=1)
# Keys of other teams one team's check tests by default (each shared key is a hypothesis of
# every team's check): at most this many active keys may be shared at once, and retired shared
# keys fill what room is left, the most recently retired first (provenance.keys.selectors
# .key_family). Sharing also needs the keys.share_watermarkkey permission.
PROVENANCE_MAX_SHARED_KEYS = env_int("PROVENANCE_MAX_SHARED_KEYS", 10, minimum=0)
# Days a retired key stays in the family a check tests by default (old text is still detected);
# after that it is tested only when a check names it.
PROVENANCE_RETIRED_KEY_WINDOW_DAYS = env_int("PROVENANCE_RETIRED_KEY_WINDOW_DAYS", 365, minimum=0)
# Key ids one check, audit or stream may name (checked before any id is read).
PROVENANCE_MAX_KEY_IDS = env_int("PROVENANCE_MAX_KEY_IDS", 64, minimum=1)
# Documents checked as files (.txt .md .html .docx .pdf), alone or zipped into an audit: the
# file size of one, the pages of one PDF, and the uncompressed size of a whole archive.
PROVENANCE_MAX_DOCUMENT_BYTES = env_int("PROVENANCE_MAX_DOCUMENT_BYTES", 10 * 1024 * 1024, 1)
PROVENANCE_MAX_DOCUMENT_PAGES = env_int("PROVENANCE_MAX_DOCUMENT_PAGES", 300, minimum=1)
PROVENANCE_MAX_ARCHIVE_BYTES = env_int("PROVENANCE_MAX_ARCHIVE_BYTES", 64 * 1024 * 1024, 1)
# Extraction runs on the workers: seconds to read one document, and all documents of a zip.
PROVENANCE_DOCUMENT_SECONDS = env_float("PROVENANCE_DOCUMENT_SECONDS", 20.0, 0.0, 3600.0)
PROVENANCE_ARCHIVE_SECONDS = env_float("PROVENANCE_ARCHIVE_SECONDS", 120.0, 0.0, 3600.0)
# Public verification reads its documents in the request (it stores nothing to poll): at most
# this many at once in one web process; another is answered 503 with Retry-After.
PROVENANCE_PUBLIC_DOCUMENT_SLOTS = env_int("PROVENANCE_PUBLIC_DOCUMENT_SLOTS", 2, minimum=1)
# Audit callbacks (provenance.webhooks): private, loopback and link-local targets are refused
# unless allowed (SSRF); each attempt times out after TIMEOUT s; failed attempts are retried
# after BACKOFF, 2 x BACKOFF, 4 x BACKOFF... seconds (at most BACKOFF_MAX), MAX_RETRIES times.
PROVENANCE_WEBHOOK_ALLOW_PRIVATE = env_bool("PROVENANCE_WEBHOOK_ALLOW_PRIVATE", False)
PROVENANCE_WEBHOOK_TIMEOUT = env_int("PROVENANCE_WEBHOOK_TIMEOUT", 10, minimum=1)
PROVENANCE_WEBHOOK_BACKOFF = env_int("PROVENANCE_WEBHOOK_BACKOFF", 10, minimum=1)
PROVENANCE_WEBHOOK_BACKOFF_MAX = env_int("PROVENANCE_WEBHOOK_BACKOFF_MAX", 3600, minimum=1)
PROVENANCE_WEBHOOK_MAX_RETRIES = env_int("PROVENANCE_WEBHOOK_MAX_RETRIES", 8, minimum=0)
# An uploaded tokenizer.json (Tekken's is 17 MB, Qwen's 11 MB).
PROVENANCE_MAX_TOKENIZER_BYTES = env_int(
    "PROVENANCE_MAX_TOKENIZER_BYTES", 48 * 1024 * 1024, minimum=1
)
PROVENANCE_MAX_AUDIT_TEXTS = env_int("PROVENANCE_MAX_AUDIT_TEXTS", 10_000, minimum=1)
PROVENANCE_THRESHOLD = env_float("PROVENANCE_THRESHOLD", _DEFAULT_THRESHOLD, 0.0, 1.0)
# Public verification (provenance.public, docs/public.md): the organization it names, the
# proof of work of an anonymous check (ALTCHA's largest number: about a second of one core
# in a browser at 300,000), the budgets (checks a minute per address, for everyone, and a
# partner's default) and the scrubbing guard (near-duplicate variants of one text answered
# within the window).
PROVENANCE_PUBLIC_ORGANIZATION = env_str("PROVENANCE_PUBLIC_ORGANIZATION", "Provenance")
PROVENANCE_PUBLIC_POW_MAX_NUMBER = env_int("PROVENANCE_PUBLIC_POW_MAX_NUMBER", 300_000, minimum=1)
PROVENANCE_PUBLIC_ADDRESS_PER_MIN = env_int("PROVENANCE_PUBLIC_ADDRESS_PER_MIN", 10, minimum=1)
PROVENANCE_PUBLIC_GLOBAL_PER_MIN = env_int("PROVENANCE_PUBLIC_GLOBAL_PER_MIN", 600, minimum=1)
PROVENANCE_PUBLIC_PARTNER_PER_MIN = env_int("PROVENANCE_PUBLIC_PARTNER_PER_MIN", 120, minimum=1)
PROVENANCE_PUBLIC_MAX_VARIANTS = env_int("PROVENANCE_PUBLIC_MAX_VARIANTS", 20, minimum=1)
PROVENANCE_PUBLIC_VARIANT_WINDOW_S = env_int("PROVENANCE_PUBLIC_VARIANT_WINDOW_S", 86400, minimum=1)
# Peer organizations (provenance.public.peers, docs/public.md): the discovery URLs of the
# verifiers a public check also asks (the operator's choice only, never the caller's; at most
# PROVENANCE_PUBLIC_MAX_PEERS), a partner key at some of them ("URL=KEY", comma-separated;
# without one the peer's proof of work is solved here) and the time the whole fan-out may take.
PROVENANCE_PUBLIC_MAX_PEERS = 8
PROVENANCE_PUBLIC_PEERS = env_list("PROVENANCE_PUBLIC_PEERS", [])
if len(PROVENANCE_PUBLIC_PEERS) > PROVENANCE_PUBLIC_MAX_PEERS:
    raise ValueError(f"PROVENANCE_PUBLIC_PEERS names at most {PROVENANCE_PUBLIC_MAX_PEERS} peers")
if len(set(PROVENANCE_PUBLIC_PEERS)) != len(PROVENANCE_PUBLIC_PEERS):
    raise ValueError("PROVENANCE_PUBLIC_PEERS names a peer twice")
for _peer in PROVENANCE_PUBLIC_PEERS:
    if not re.fullmatch(r"https?://[^/?#\s@]+/\S*", _peer):
        raise ValueError(f"PROVENANCE_PUBLIC_PEERS: not an http(s) discovery URL: {_peer!r}")
PROVENANCE_PUBLIC_PEER_KEYS: dict[str, str] = {}
for _pair in env_list("PROVENANCE_PUBLIC_PEER_KEYS", []):
    _url, _, _key = _pair.rpartition("=")
    if _url not in PROVENANCE_PUBLIC_PEERS or not _key:
        raise ValueError("PROVENANCE_PUBLIC_PEER_KEYS holds URL=KEY pairs of configured peers")
    PROVENANCE_PUBLIC_PEER_KEYS[_url] = _key
PROVENANCE_PUBLIC_PEER_TIMEOUT_S = env_float("PROVENANCE_PUBLIC_PEER_TIMEOUT_S", 10.0, 0.0, 60.0)
# A key's calibration (manage.py keys_calibrate, the keys page): human texts per genre, and
# the power measurement's size where the key's tokenizer has a model (prompts per temperature,
# tokens per generated text; 0 prompts skips it). About 7 CPU s a key for the rates and 2.5 CPU
# minutes for the power curve at the defaults.
PROVENANCE_CALIBRATION_TEXTS = env_int("PROVENANCE_CALIBRATION_TEXTS", 300, minimum=1)
PROVENANCE_CALIBRATION_POWER_PROMPTS = env_int("PROVENANCE_CALIBRATION_POWER_PROMPTS", 8, minimum=0)
# Chunks per genre the model-assisted decision is measured on (when model assistance is on):
# the model reads each one, so the sample is smaller than the model-free one. 0: skipped.
PROVENANCE_CALIBRATION_ASSIST_TEXTS = env_int("PROVENANCE_CALIBRATION_ASSIST_TEXTS", 40, minimum=0)
PROVENANCE_CALIBRATION_POWER_TOKENS = env_int(
    "PROVENANCE_CALIBRATION_POWER_TOKENS", 300, minimum=10
)
# Texts per Celery task of an audit: amortizes task overhead against parallelism.
PROVENANCE_AUDIT_CHUNK = env_int("PROVENANCE_AUDIT_CHUNK", 500, minimum=1)
# Model-assisted detection on the workers, for tokenizers with a registered model: "auto"
# (the default) runs it where the worker has a CUDA device; 1 also on the CPU (a forward
# pass of about a second per 1,000 tokens), 0 never.
PROVENANCE_MODEL_ASSIST: bool | str = (
    "auto"
    if os.environ.get("PROVENANCE_MODEL_ASSIST", "").strip().lower() in ("", "auto")
    else env_bool("PROVENANCE_MODEL_ASSIST", False)
)
# Tokens one task reads with a model (texts in order, whole texts only); 0: 2,048 on the CPU,
# 1,000,000 on CUDA. Texts past the budget get the Gamma test alone.
PROVENANCE_ASSIST_MAX_TOKENS = env_int("PROVENANCE_ASSIST_MAX_TOKENS", 0, minimum=0)
# The runtime of that reading on a worker without a CUDA device: "torch" (the reference) or
# "onnxruntime" (the same scores within 5e-3 at half the CPU, from graphs exported once under
# the data directory: detector/reading/ort.py). A CUDA worker reads with torch on its GPU.
_ASSIST_RUNTIMES = ("torch", "onnxruntime")
PROVENANCE_ASSIST_RUNTIME = env_str("PROVENANCE_ASSIST_RUNTIME", "torch").strip().lower()
if PROVENANCE_ASSIST_RUNTIME not in _ASSIST_RUNTIMES:
    raise ValueError(
        f"PROVENANCE_ASSIST_RUNTIME must be one of {', '.join(_ASSIST_RUNTIMES)}, "
        f"got {PROVENANCE_ASSIST_RUNTIME!r}"
    )
# The detector is an oracle for forging and scrubbing: texts per user per UTC day, counted
# from the audit log (checks, audit texts and /detect calls alike).
PROVENANCE_DAILY_QUOTA = env_int("PROVENANCE_DAILY_QUOTA", 50_000, minimum=1)
# Days a submitted text and its per-token data are kept (a team may set fewer); then
# manage.py checks_purge (the sweeper and make run run it) keeps only verdict, p-values
# and the text's SHA-256.
PROVENANCE_RETENTION_DAYS = env_int("PROVENANCE_RETENTION_DAYS", 30, minimum=1)
# --- Operator metrics (GET /metrics, docs/metrics.md) ---
# The bearer token a Prometheus scraper sends; unset: /metrics answers 404. A short value
# is refused (a guessable token would publish the figures).
PROVENANCE_METRICS_TOKEN = env_str("PROVENANCE_METRICS_TOKEN", "")
if PROVENANCE_METRICS_TOKEN and len(PROVENANCE_METRICS_TOKEN) < 16:
    raise ValueError("PROVENANCE_METRICS_TOKEN must be at least 16 characters")
# Seconds a web process reuses the figures it read from the database for the next scrape.
PROVENANCE_METRICS_MAX_AGE = env_float("PROVENANCE_METRICS_MAX_AGE", 10.0, 0.0, 3600.0)
