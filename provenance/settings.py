"""Django settings, Django's own and the product's (``PROVENANCE_*``), all in this module,
each read from the environment through ``provenance.env``'s typed readers (which fail loudly
on malformed values). Each is described in docs/operations.md and listed in ``.env.example``.

The embedded default (``make run``, the test suite) works with no variable set: SQLite and
a local data directory. Production sets DATABASE_URL, REDIS_URL, DJANGO_SECRET_KEY and
PROVENANCE_KEK (see ``.env.example``).
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from detector.core.config import DEFAULT_THRESHOLD as _DEFAULT_THRESHOLD  # not a setting
from detector.reading.choice import READINGS as _READINGS  # not a setting
from provenance.env import (
    data_dir,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_mapping,
    env_model_assist,
    env_required,
    env_str,
    env_url_keys,
    env_urls,
)
from provenance.lib.postgresql import database_settings
from provenance.private_files import generated_secret_key, private_dir, private_load_or_create

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = private_dir(data_dir())  # resolved: the directory checked is the one used

DEBUG = env_bool("DJANGO_DEBUG", False)
# Without DJANGO_SECRET_KEY the embedded default (make run, tests) makes a random one once, kept
# in the data directory (secret.key, 0600; provenance.private_files); production sets its own.
PROVENANCE_EMBEDDED = env_bool("PROVENANCE_EMBEDDED", True)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
# Published values (a former constant, .env.example's placeholder): refused everywhere.
PLACEHOLDER_SECRET_KEYS = frozenset(
    {"embedded-development-only-not-secret", "change-me-to-a-long-random-string"}
)
# .env.example's passwords in URLs (DATABASE_URL, REDIS_URL) are this marker.
PLACEHOLDER_MARKER = "CHANGE-ME"
if SECRET_KEY in PLACEHOLDER_SECRET_KEYS or PLACEHOLDER_MARKER in SECRET_KEY.upper():
    raise ValueError(
        "DJANGO_SECRET_KEY is a published placeholder; set a long random value "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))') or, in the embedded "
        "default, leave it unset to have one generated in the data directory"
    )
if not SECRET_KEY:
    if PROVENANCE_EMBEDDED:
        SECRET_KEY = private_load_or_create(DATA_DIR / "secret.key", generated_secret_key)
    else:
        raise ValueError("DJANGO_SECRET_KEY must be set when PROVENANCE_EMBEDDED=0")
for _variable in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "PROVENANCE_CACHE_URL"):
    if PLACEHOLDER_MARKER in env_str(_variable, "").upper():
        raise ValueError(f"{_variable} holds .env.example's {PLACEHOLDER_MARKER} placeholder")
# DEBUG pages show code, settings and requests: only the embedded default may turn it on.
if DEBUG and not PROVENANCE_EMBEDDED:
    raise ValueError("DJANGO_DEBUG=1 is refused when PROVENANCE_EMBEDDED=0")
# Error pages and mails hide the KEK, broker and cache URLs and any URL with a password.
DEFAULT_EXCEPTION_REPORTER_FILTER = "provenance.reporting.SecretsHiddenFilter"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# --- Transport security ------------------------------------------------------------------
# Production (PROVENANCE_EMBEDDED=0) is served over HTTPS: secure cookies, HSTS and a redirect
# by default; DJANGO_HTTPS=0 turns them off for a plain-HTTP trial (docker compose locally).
HTTPS = env_bool("DJANGO_HTTPS", not PROVENANCE_EMBEDDED)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", HTTPS)
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True  # forms carry the token; no script reads the cookie
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
SECURE_SSL_REDIRECT = env_bool("DJANGO_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31_536_000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", HTTPS)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", HTTPS)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (never trust it otherwise).
BEHIND_TLS_PROXY = env_bool("DJANGO_BEHIND_TLS_PROXY", False)
if BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Who is asking (provenance.lib.identity, docs/callers.md): the proxies of the deployment's own
# that append to X-Forwarded-For. Unset: one behind a TLS proxy, none otherwise.
PROVENANCE_TRUSTED_PROXIES = env_int("PROVENANCE_TRUSTED_PROXIES", int(BEHIND_TLS_PROXY))
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Every asset is served by the app and no template carries inline script or style, so the
# policy can forbid both (provenance.middleware adds the header; the browser tests listen
# for violations).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "knox",  # API tokens, stored as digests (provenance/accounts/auth.py)
    "axes",  # login throttling (provenance/accounts/backends.py)
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "mozilla_django_oidc",
    "provenance.accounts",
    "provenance.keys",
    "provenance.checks",
    "provenance.audits",
    "provenance.usage",
    "provenance.retention",
    "provenance.heartbeats",
    "provenance.sweeper",
    "provenance.playground",
    "provenance.webhooks",
    "provenance.reports",
    "provenance.streams",
    "provenance.public",
    "provenance.softbinding",
    "provenance.metrics",
]

MIDDLEWARE = [
    # The client's address, behind the trusted proxies, for the access log (every request).
    "provenance.middleware.ClientAddressMiddleware",
    # /healthz and /readyz for probes, before the HTTPS redirect and the Host check
    # (provenance/health.py); every other path goes on below.
    "provenance.health.HealthProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page language: the switcher's cookie, else Accept-Language; the API answers in
    # English whatever was asked (provenance.middleware.ApiInEnglishMiddleware).
    "django.middleware.locale.LocaleMiddleware",
    "provenance.middleware.ApiInEnglishMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "provenance.middleware.ContentSecurityPolicyMiddleware",
    "provenance.middleware.DatabaseUnavailableMiddleware",
    # Turns a sign-in refused by django-axes' lockout into its 429 page (after the others).
    "axes.middleware.AxesMiddleware",
    # Counts the answers of the routes that store no check (public verification, streams).
    "provenance.metrics.middleware.MetricsMiddleware",
]

ROOT_URLCONF = "provenance.urls"
WSGI_APPLICATION = "provenance.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PostgreSQL on the product's backend; a kept connection is checked before it is reused.
DATABASES = {
    "default": database_settings(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'provenance.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web and worker write the same file: wait for the lock instead of failing at once.
    # WAL: readers (pages polling progress) do not block the worker's writes, nor the
    # reverse; IMMEDIATE: writers take the lock up front instead of failing on upgrade.
    # CONN_MAX_AGE holds for SQLite too (a connection per web thread): opening one and
    # running these pragmas costs about 1.6 ms of CPU, a tenth of an inline check's request.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=env_float("DATABASE_SQLITE_TIMEOUT", 20.0, 0.0, 3600.0),
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
# The web UI's languages; catalogs in locale/<code>/LC_MESSAGES/django.po, compiled by the
# set-up (python -m provenance.i18n). API error messages stay English.
LANGUAGES = [
    ("en", "English"),
    ("ja", "日本語"),
    ("zh-hans", "简体中文"),
    ("ko", "한국어"),
]
LOCALE_PATHS = [BASE_DIR / "locale"]
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(DATA_DIR / "static")))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
STATICFILES_DIRS = [BASE_DIR / "provenance" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Serve from the finders too, so the embedded default needs no collectstatic.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"


# --- Organization sign-in (OpenID Connect, mozilla-django-oidc) --------------------------
# Off unless PROVENANCE_OIDC_CLIENT_ID is set; local accounts always work beside it. The
# group claim maps users to teams (a user in no mapped group is refused), to team admin and
# to the playground permission at every sign-in (provenance/accounts/oidc.py).
PROVENANCE_OIDC: dict[str, Any] = {
    "ENABLED": bool(env_str("PROVENANCE_OIDC_CLIENT_ID", "")),
    "LABEL": env_str("PROVENANCE_OIDC_LABEL", "your organization"),
    "GROUP_CLAIM": env_str("PROVENANCE_OIDC_GROUP_CLAIM", "groups"),
    "TEAMS": env_mapping("PROVENANCE_OIDC_TEAMS"),
    "ADMIN_GROUPS": env_list("PROVENANCE_OIDC_ADMIN_GROUPS", []),
    "PLAYGROUND_GROUPS": env_list("PROVENANCE_OIDC_PLAYGROUND_GROUPS", []),
}
# The login throttle comes first: a locked-out username and address is refused before any
# backend reads a password (provenance/accounts/backends.py).
AUTHENTICATION_BACKENDS = [
    "provenance.accounts.backends.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
if PROVENANCE_OIDC["ENABLED"]:
    AUTHENTICATION_BACKENDS.insert(1, "provenance.accounts.oidc.OrganizationBackend")
    _WHEN = "when PROVENANCE_OIDC_CLIENT_ID is"
    OIDC_RP_CLIENT_SECRET = env_required("PROVENANCE_OIDC_CLIENT_SECRET", _WHEN)
    OIDC_OP_AUTHORIZATION_ENDPOINT = env_required("PROVENANCE_OIDC_AUTHORIZATION_ENDPOINT", _WHEN)
    OIDC_OP_TOKEN_ENDPOINT = env_required("PROVENANCE_OIDC_TOKEN_ENDPOINT", _WHEN)
    OIDC_OP_USER_ENDPOINT = env_required("PROVENANCE_OIDC_USERINFO_ENDPOINT", _WHEN)
    OIDC_OP_JWKS_ENDPOINT = env_required("PROVENANCE_OIDC_JWKS_ENDPOINT", _WHEN)
    if not PROVENANCE_OIDC["TEAMS"]:
        raise ValueError("PROVENANCE_OIDC_TEAMS must map at least one group to a team")
    # An organization session asks the provider again (silently, prompt=none) once its ID
    # token is older than this: a user removed at the provider is signed out then. The API
    # (tokens), the JWKS and static files are not redirected.
    MIDDLEWARE.append("mozilla_django_oidc.middleware.SessionRefresh")
OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = env_int("PROVENANCE_OIDC_RENEW_SECONDS", 900, minimum=1)
OIDC_EXEMPT_URLS = [re.compile(r"^/(api|static|\.well-known)/")]
OIDC_RP_CLIENT_ID = env_str("PROVENANCE_OIDC_CLIENT_ID", "")
OIDC_RP_SIGN_ALGO = env_str("PROVENANCE_OIDC_SIGN_ALGO", "RS256")
OIDC_RP_SCOPES = env_str("PROVENANCE_OIDC_SCOPES", "openid email profile groups")
OIDC_USE_PKCE = True
OIDC_TIMEOUT = 10
LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?oidc=refused"

# --- Credentials --------------------------------------------------------------------------
# API tokens (django-rest-knox): the database keeps a SHA-512 digest and a 15-character
# prefix, never the token; a token is shown once, expires PROVENANCE_API_TOKEN_DAYS after it
# was made, and clients keep sending "Authorization: Token <token>".
PROVENANCE_API_TOKEN_DAYS = env_int("PROVENANCE_API_TOKEN_DAYS", 90, minimum=1)
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=PROVENANCE_API_TOKEN_DAYS),
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
# Login throttling (django-axes) on every password sign-in (/accounts/login/, /admin/login/):
# after PROVENANCE_LOGIN_FAILURES failures for one username from one address, that pair is
# refused with 429 for PROVENANCE_LOGIN_LOCKOUT_MINUTES; a successful sign-in clears its count.
# Attempts are counted in the database, so every web process agrees.
AXES_FAILURE_LIMIT = env_int("PROVENANCE_LOGIN_FAILURES", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("PROVENANCE_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The client's address as every other counter sees it (docs/callers.md), never the proxy's.
AXES_CLIENT_IP_CALLABLE = "provenance.lib.identity.axes_client_address"
# Beside that pair, in the same window (provenance/accounts/backends.py): failures from one
# address across every username (a password sprayed over many accounts), and failures of one
# username across every address (one account guessed from many). The second can keep a user
# out for the window, so its limit is well above the pair's.
PROVENANCE_LOGIN_ADDRESS_FAILURES = env_int("PROVENANCE_LOGIN_ADDRESS_FAILURES", 20, minimum=1)
PROVENANCE_LOGIN_USERNAME_FAILURES = env_int("PROVENANCE_LOGIN_USERNAME_FAILURES", 50, minimum=1)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
# No record of every successful sign-in (addresses and user agents kept for no purpose).
AXES_DISABLE_ACCESS_LOG = True

# --- Provenance -------------------------------------------------------------------------
# The product's own settings (PROVENANCE_*), each described in docs/operations.md.
# Key-encryption key (urlsafe base64, 32 bytes, as from Fernet.generate_key()). Unset: the
# embedded default generates one into DATA_DIR on first use (provenance.lib.crypto).
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
# Public verification (docs/public.md, docs/callers.md): the organization, the proof of work,
# the budgets and their shares, the scrubbing guard and the texts answered per requester.
PROVENANCE_PUBLIC_ORGANIZATION = env_str("PROVENANCE_PUBLIC_ORGANIZATION", "Provenance")
PROVENANCE_PUBLIC_POW_MAX_NUMBER = env_int("PROVENANCE_PUBLIC_POW_MAX_NUMBER", 300_000, minimum=1)
PROVENANCE_PUBLIC_ADDRESS_PER_MIN = env_int("PROVENANCE_PUBLIC_ADDRESS_PER_MIN", 10, minimum=1)
PROVENANCE_PUBLIC_GLOBAL_PER_MIN = env_int("PROVENANCE_PUBLIC_GLOBAL_PER_MIN", 600, minimum=1)
PROVENANCE_PUBLIC_NETWORK_SHARE = env_float("PROVENANCE_PUBLIC_NETWORK_SHARE", 0.1, 0.0, 1.0)
PROVENANCE_PUBLIC_SITE_SHARE = env_float("PROVENANCE_PUBLIC_SITE_SHARE", 0.5, 0.0, 1.0)
PROVENANCE_PUBLIC_POW_FLOOD_FACTOR = env_int("PROVENANCE_PUBLIC_POW_FLOOD_FACTOR", 32, minimum=1)
PROVENANCE_PUBLIC_PARTNER_PER_MIN = env_int("PROVENANCE_PUBLIC_PARTNER_PER_MIN", 120, minimum=1)
PROVENANCE_PUBLIC_MAX_VARIANTS = env_int("PROVENANCE_PUBLIC_MAX_VARIANTS", 20, minimum=1)
PROVENANCE_PUBLIC_VARIANT_WINDOW_S = env_int("PROVENANCE_PUBLIC_VARIANT_WINDOW_S", 86400, minimum=1)
PROVENANCE_PUBLIC_MAX_TEXTS = env_int("PROVENANCE_PUBLIC_MAX_TEXTS", 200, minimum=1)
PROVENANCE_PUBLIC_PARTNER_MAX_TEXTS = env_int(
    "PROVENANCE_PUBLIC_PARTNER_MAX_TEXTS", 20_000, minimum=1
)
# Peer organizations a public check also asks (the operator's choice only; docs/public.md).
PROVENANCE_PUBLIC_MAX_PEERS = 8
PROVENANCE_PUBLIC_PEERS = env_urls("PROVENANCE_PUBLIC_PEERS", PROVENANCE_PUBLIC_MAX_PEERS)
PROVENANCE_PUBLIC_PEER_KEYS = env_url_keys("PROVENANCE_PUBLIC_PEER_KEYS", PROVENANCE_PUBLIC_PEERS)
PROVENANCE_PUBLIC_PEER_TIMEOUT_S = env_float("PROVENANCE_PUBLIC_PEER_TIMEOUT_S", 10.0, 0.0, 60.0)
# Content Credentials (docs/c2pa.md): the C2PA signing certificate and key, the trust anchors.
PROVENANCE_C2PA_CERT = env_str("PROVENANCE_C2PA_CERT", "")
PROVENANCE_C2PA_KEY = env_str("PROVENANCE_C2PA_KEY", "")
PROVENANCE_C2PA_TRUST_ANCHORS = env_str("PROVENANCE_C2PA_TRUST_ANCHORS", "")
# A key's calibration (docs/checks.md): human texts per genre, the power measurement's size.
PROVENANCE_CALIBRATION_TEXTS = env_int("PROVENANCE_CALIBRATION_TEXTS", 300, minimum=1)
PROVENANCE_CALIBRATION_POWER_PROMPTS = env_int("PROVENANCE_CALIBRATION_POWER_PROMPTS", 8, minimum=0)
PROVENANCE_CALIBRATION_ASSIST_TEXTS = env_int("PROVENANCE_CALIBRATION_ASSIST_TEXTS", 40, minimum=0)
PROVENANCE_CALIBRATION_POWER_TOKENS = env_int(
    "PROVENANCE_CALIBRATION_POWER_TOKENS", 300, minimum=10
)
# Texts per Celery task of an audit: amortizes task overhead against parallelism.
PROVENANCE_AUDIT_CHUNK = env_int("PROVENANCE_AUDIT_CHUNK", 500, minimum=1)
# Model-assisted detection (docs/detector.md): "adaptive" (default: a reading only where the
# model-free decision is undecided), "auto" (the same on CUDA workers only), 0 never.
PROVENANCE_MODEL_ASSIST: bool | str = env_model_assist("PROVENANCE_MODEL_ASSIST")
# Tokens one task reads with a model (texts in order, whole texts only); 0: 2,048 on the CPU,
# 1,000,000 on CUDA. Texts past the budget keep their model-free verdict.
PROVENANCE_ASSIST_MAX_TOKENS = env_int("PROVENANCE_ASSIST_MAX_TOKENS", 0, minimum=0)
# The reading a CPU worker reads with (detector.reading.choice.READINGS); CUDA reads with torch.
PROVENANCE_READING = env_choice("PROVENANCE_READING", tuple(_READINGS))
# Reading seconds a team's audits may spend per UTC day (0: none; docs/audits.md).
PROVENANCE_AUDIT_READING_SECONDS = env_int("PROVENANCE_AUDIT_READING_SECONDS", 600, minimum=0)
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

# An audit body of 10,000 texts of up to 200 KB is large; Django's default is 2.5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", 64 * 1024 * 1024)

# The playground's generator (its OpenAI-compatible server; ``make run`` starts one) and the
# bounds that keep a slow or hung generator from holding a web worker (seconds).
PROVENANCE_PLAYGROUND = {
    "GENERATOR_URL": env_str("PROVENANCE_GENERATOR_URL", "http://127.0.0.1:8001"),
    # The playground's bearer token at the generator (make run issues one per run).
    "GENERATOR_TOKEN": env_str("PROVENANCE_GENERATOR_TOKEN", ""),
    "CONNECT_TIMEOUT": env_int("PROVENANCE_GENERATOR_CONNECT_TIMEOUT", 3, minimum=1),
    "READ_TIMEOUT": env_int("PROVENANCE_GENERATOR_READ_TIMEOUT", 30, minimum=1),
    "MAX_SECONDS": env_int("PROVENANCE_GENERATOR_MAX_SECONDS", 180, minimum=1),
    "MAX_STREAMS": env_int("PROVENANCE_PLAYGROUND_MAX_STREAMS", 4, minimum=1),
    "MAX_TOKENS": env_int("PROVENANCE_PLAYGROUND_MAX_TOKENS", 512, minimum=1),
}

# --- Celery -----------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
# kombu's Redis transport, less a client object made per command (provenance.lib.broker).
if urlsplit(CELERY_BROKER_URL).scheme in ("redis", "rediss"):
    CELERY_BROKER_TRANSPORT = "provenance.lib.broker:Transport"
CELERY_RESULT_BACKEND = None  # results live in the database rows the tasks own
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fix-up closes every database connection before and after each task unless
# this is set (a new connection per task: SQLite's pragmas, PostgreSQL's connection and
# backend start). Kept instead, and aged like a request's: DATABASE_CONN_MAX_AGE, a broken
# one closed (provenance.celery closes them around each task as Django does per request).
CELERY_DB_REUSE_MAX = 2**31
# Options every task shares are the CELERY_* settings above; a task sets only what is its
# own (name, retries, and these limits, in seconds). The soft limit raises inside the task,
# which marks its rows failed; the hard limit kills the worker child.
PROVENANCE_CHECK_SOFT_TIME_LIMIT = env_int("PROVENANCE_CHECK_SOFT_TIME_LIMIT", 60, minimum=1)
PROVENANCE_CHECK_TIME_LIMIT = PROVENANCE_CHECK_SOFT_TIME_LIMIT + 30
PROVENANCE_AUDIT_CHUNK_SOFT_TIME_LIMIT = env_int(
    "PROVENANCE_AUDIT_CHUNK_SOFT_TIME_LIMIT", 600, minimum=1
)
PROVENANCE_AUDIT_CHUNK_TIME_LIMIT = PROVENANCE_AUDIT_CHUNK_SOFT_TIME_LIMIT + 60
PROVENANCE_CALIBRATION_SOFT_TIME_LIMIT = env_int(
    "PROVENANCE_CALIBRATION_SOFT_TIME_LIMIT", 1800, minimum=1
)
PROVENANCE_CALIBRATION_TIME_LIMIT = PROVENANCE_CALIBRATION_SOFT_TIME_LIMIT + 60
# Workers beat every WORKER_HEARTBEAT seconds; one silent for five beats is dead and the
# checks it held are queued again at once (a worker restarted under the same node name
# replaces the old one when it starts, without waiting for that).
PROVENANCE_WORKER_HEARTBEAT = env_int("PROVENANCE_WORKER_HEARTBEAT", 2, minimum=1)
PROVENANCE_WORKER_DEAD_AFTER = 5 * PROVENANCE_WORKER_HEARTBEAT
# The sweeper (manage.py checks_sweep; make run runs it) passes every SWEEP_INTERVAL seconds:
# it reaps dead workers and queues again what is lost. A queued check counts as lost only
# when the broker's queue is empty, no worker holds it and it was queued PENDING_AFTER
# seconds ago (Redis restarted empty; a worker died with the message in hand): a backlog is
# never taken for lost work. RUNNING_AFTER frees a running check whose holder is unknown; a
# running check younger than every task's hard limit may still be alive, so it is derived
# from the longest one (default: 240 s beyond it) and may not be set below it.
_LONGEST_TASK = max(PROVENANCE_CHECK_TIME_LIMIT, PROVENANCE_AUDIT_CHUNK_TIME_LIMIT)
PROVENANCE_SWEEP_INTERVAL = env_int("PROVENANCE_SWEEP_INTERVAL", 3, minimum=1)
PROVENANCE_SWEEP_PENDING_AFTER = env_int("PROVENANCE_SWEEP_PENDING_AFTER", 10, minimum=1)
PROVENANCE_SWEEP_RUNNING_AFTER = env_int(
    "PROVENANCE_SWEEP_RUNNING_AFTER", _LONGEST_TASK + 240, minimum=_LONGEST_TASK + 1
)

# --- DRF --------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "provenance.accounts.auth.TokenAuthentication",
        "provenance.accounts.auth.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: DRF's browsable HTML carries inline style the CSP forbids; /api/docs/ is the
    # interactive view.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # Every body an allowlist, all the way down, through one set of parsers (api_input).
    "DEFAULT_PARSER_CLASSES": [
        "provenance.api_input.JSONParser",
        "provenance.api_input.FormParser",
        "provenance.api_input.MultiPartParser",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "provenance.api_input.BodyNegotiation",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["provenance.throttling.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("PROVENANCE_USER_THROTTLE", "600/min"),
        # Submissions to the detector (checks, audits, /detect), per user.
        "detect": env_str("PROVENANCE_DETECT_THROTTLE", "120/min"),
    },
    "EXCEPTION_HANDLER": "provenance.api_errors.exception_handler",
    # DRF's own reading of the client's address (the product asks provenance.lib.identity).
    "NUM_PROXIES": PROVENANCE_TRUSTED_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Provenance API",
    "DESCRIPTION": "Detect vLLM's keyed Gumbel-max watermark in texts.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and docs are for signed-in users (scripts send their token).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Request bodies say what the parsers enforce: no undeclared property, at any depth.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "provenance.api_input.request_bodies_closed",
    ],
}

# The rate limits (DRF throttles) count in this cache. A redis:// URL gives one count across
# every web process (docker-compose and make run set it; while Redis is unreachable each process
# counts alone, provenance.cache); unset, each process counts alone.
PROVENANCE_CACHE_URL = env_str("PROVENANCE_CACHE_URL", "")
CACHES: dict[str, dict[str, Any]] = {
    "default": (
        {"BACKEND": "provenance.cache.FailoverRedisCache", "LOCATION": PROVENANCE_CACHE_URL}
        if PROVENANCE_CACHE_URL
        # Room for the scrubbing guard's fingerprints (the default 300 entries would cull them).
        else {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "OPTIONS": {"MAX_ENTRIES": 200_000},
        }
    )
}
# Public verification's answers, peers' answers and the scrubbing guard's fingerprints: a
# store of their own, bounded (Redis with maxmemory and an eviction policy: compose's `cache`
# service, make run's second Redis), so they never share memory with the broker's messages
# or the budgets. Unset: the default cache above.
PROVENANCE_PUBLIC_CACHE_URL = env_str("PROVENANCE_PUBLIC_CACHE_URL", "")
if PROVENANCE_PUBLIC_CACHE_URL:
    CACHES["public"] = {
        "BACKEND": "provenance.cache.FailoverRedisCache",
        "LOCATION": PROVENANCE_PUBLIC_CACHE_URL,
    }

# Log lines: "plain" (the default) or "json" (one JSON object a line, for log shippers).
PROVENANCE_LOG_FORMAT = env_choice("PROVENANCE_LOG_FORMAT", ("plain", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        # PROVENANCE_LOG_FORMAT=json: the same fields as JSON keys (python-json-logger).
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": PROVENANCE_LOG_FORMAT}},
    "root": {"handlers": ["console"], "level": env_str("PROVENANCE_LOG_LEVEL", "INFO")},
}
SPECTACULAR_SETTINGS.update(
    {
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
        "ENUM_NAME_OVERRIDES": {
            "CheckStatusEnum": "provenance.checks.models.Status",
            "KeyStatusEnum": "provenance.keys.models.WatermarkKey.Status",
        },
    }
)
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 2,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
