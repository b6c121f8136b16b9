"""Every variable the product reads from the environment is read through this module, and no
other module of ``provenance/`` reads ``os.environ`` (tests/provenance/test_settings.py checks
both, and that ``.env.example`` lists every name).

Two kinds of reader: the typed helpers below, with which ``provenance.settings`` builds
Django's settings once at start (an empty value means the default; a value not of its kind
stops the process at start with the variable's name), and the few values read at call time by
processes that run before or beside those settings (the embedded runner, the WSGI preload,
the metrics' multiprocess directory), one typed function each.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    # An empty value (NAME= in an env file) means "use the default", as for the others.
    return os.environ.get(name) or default


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name} must be a boolean (1/0/true/false), got {raw!r}")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(name: str, default: float, low: float, high: float) -> float:
    """A float in the open interval (low, high)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not low < value < high:
        raise ValueError(f"{name} must lie in ({low}, {high}), got {value}")
    return value


def env_required(name: str, when: str) -> str:
    """A value that must be set (``when``: the condition, for the message)."""
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"{name} must be set {when}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_mapping(name: str) -> dict[str, str]:
    """``a=b,c=d`` as {"a": "b", "c": "d"} (in order); a malformed pair stops the start."""
    mapping = {}
    for pair in env_list(name, []):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{name} must be comma-separated group=team pairs, got {pair!r}")
        mapping[key.strip()] = value.strip()
    return mapping


def env_choice(name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (any case; the first by default)."""
    value = env_str(name, choices[0]).strip().lower()
    if value not in choices:
        raise ValueError(f"{name} must be {' or '.join(choices)}")
    return value


def env_urls(name: str, most: int) -> list[str]:
    """Distinct http(s) URLs with a path (discovery documents), at most ``most``."""
    urls = env_list(name, [])
    if len(urls) > most:
        raise ValueError(f"{name} names at most {most} peers")
    if len(set(urls)) != len(urls):
        raise ValueError(f"{name} names a peer twice")
    for url in urls:
        if not re.fullmatch(r"https?://[^/?#\s@]+/\S*", url):
            raise ValueError(f"{name}: not an http(s) discovery URL: {url!r}")
    return urls


def env_url_keys(name: str, urls: list[str]) -> dict[str, str]:
    """``URL=KEY`` pairs (comma-separated), each URL one of ``urls``; the message never
    holds a key."""
    keys = {}
    for pair in env_list(name, []):
        url, _, key = pair.rpartition("=")
        if url not in urls or not key:
            raise ValueError(f"{name} holds URL=KEY pairs of configured peers")
        keys[url] = key
    return keys


def env_auto_or_bool(name: str) -> bool | str:
    """``"auto"`` when unset, empty or ``auto``; else a boolean (``env_bool``'s spellings)."""
    if os.environ.get(name, "").strip().lower() in ("", "auto"):
        return "auto"
    return env_bool(name, False)


def env_model_assist(name: str) -> bool | str:
    """``"adaptive"`` when unset, empty, ``adaptive`` or true (``env_bool``'s spellings);
    ``"auto"`` for ``auto``; False for a false spelling."""
    raw = os.environ.get(name, "").strip().lower()
    if raw in ("", "adaptive"):
        return "adaptive"
    if raw == "auto":
        return "auto"
    return "adaptive" if env_bool(name, False) else False


# --- Read at call time, outside Django's settings -------------------------------------------


def environment_subset(keep: Callable[[str], bool]) -> dict[str, str]:
    """The variables whose names ``keep`` admits (a child process's whole environment)."""
    return {name: value for name, value in os.environ.items() if keep(name)}


def data_dir() -> Path:
    """``PROVENANCE_DATA_DIR``, else ``<repo>/var``: the rule of ``detector.paths.data_dir``
    (the library's own default), read here for the product without importing the library."""
    return Path(env_str("PROVENANCE_DATA_DIR", str(REPO_ROOT / "var")))


def runner_address() -> tuple[str, int]:
    """Where ``make run`` serves the web: ``PROVENANCE_HOST`` and ``PROVENANCE_PORT``."""
    return env_str("PROVENANCE_HOST", "127.0.0.1"), env_int("PROVENANCE_PORT", 8000, minimum=1)


def demo_key() -> str | None:
    """``PROVENANCE_DEMO_KEY``: the embedded demo key's value (to match a vLLM server started
    with a known key); unset, a random one."""
    return env_str("PROVENANCE_DEMO_KEY", "") or None


def web_workers(default: int) -> int:
    """``PROVENANCE_WEB_WORKERS``: the embedded runner's gunicorn processes."""
    return env_int("PROVENANCE_WEB_WORKERS", default, minimum=1)


def web_threads() -> int:
    """``PROVENANCE_WEB_THREADS``: threads per gunicorn process of the embedded runner."""
    return env_int("PROVENANCE_WEB_THREADS", 8, minimum=1)


def web_preload() -> bool:
    """``PROVENANCE_WEB_PRELOAD=1``: the WSGI module loads the views and tokenizers before a
    ``--preload`` gunicorn forks."""
    return env_bool("PROVENANCE_WEB_PRELOAD", False)


def generator_backend() -> str:
    """``PROVENANCE_GENERATOR_BACKEND``: ``vllm`` or ``transformers`` for the embedded
    playground generator; anything else (unset) lets the runner choose."""
    chosen = env_str("PROVENANCE_GENERATOR_BACKEND", "")
    return chosen if chosen in ("vllm", "transformers") else ""


def generator_url() -> str | None:
    """``PROVENANCE_GENERATOR_URL``: a generator the operator runs (then the runner starts
    none); None when unset."""
    return env_str("PROVENANCE_GENERATOR_URL", "") or None


def metrics_multiprocess_dir() -> str:
    """``PROMETHEUS_MULTIPROC_DIR`` (read by prometheus_client itself too): every web process
    writes its counters there; empty when each process counts alone."""
    return env_str("PROMETHEUS_MULTIPROC_DIR", "")
