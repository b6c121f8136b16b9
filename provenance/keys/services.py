"""Writes to the registry. Key values leave these functions only as the one-time return
value of key_create / key_rotate; callers show it once and drop it."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import User
from django.db import models, transaction
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables

from detector.core.config import (
    DEFAULT_ALGORITHM,
    DEFAULT_ALPHA,
    DEFAULT_CONTEXT_WIDTH,
    parse_key,
)
from detector.text import mistral
from detector.text.tokenizers import load_tokenizer
from provenance.accounts.models import Team
from provenance.errors import Conflict, PayloadTooLarge, ProblemError
from provenance.keys.models import Tokenizer, WatermarkKey, registry_config
from provenance.lib.crypto import encrypt_value, reencrypt
from provenance.scoring.service import EMBEDDED_MODEL, model_dir_of


class RegistryError(ProblemError):
    """A registry write was refused; the message is safe to show."""


@sensitive_variables("raw")  # hidden from Django's error reports
def parse_key_value(raw: str | int | None) -> int:
    """A key value typed by an administrator (``detector.core.config.parse_key``: decimal or
    0x-hex); None/empty = generate one."""
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return secrets.randbits(64)
    try:
        return parse_key(raw)
    except ValueError as exc:  # parse_key's messages never hold the value
        raise RegistryError(str(exc)) from None


def tokenizer_inspect(*, source_kind: str, source_path: str = "") -> tuple[str, int]:
    """Load a tokenizer source once: (content hash, vocabulary size), or a clear error."""
    if source_kind not in Tokenizer.Source.values:
        raise RegistryError(f"unknown tokenizer source {source_kind!r}")
    if source_kind == Tokenizer.Source.UPLOAD:
        raise RegistryError("an uploaded tokenizer is registered with tokenizer_upload")
    if source_kind == Tokenizer.Source.BUILTIN and source_path not in mistral.BUILTINS:
        raise RegistryError(
            f"unknown built-in tokenizer {source_path!r}; known: {mistral.BUILTINS}"
        )
    if source_kind != Tokenizer.Source.DEFAULT and not source_path:
        raise RegistryError("a local tokenizer needs a path")
    source = "default" if source_kind == Tokenizer.Source.DEFAULT else source_path
    try:
        loaded = load_tokenizer(source)
    except (OSError, ValueError) as exc:
        raise RegistryError(f"cannot load tokenizer from {source!r}: {exc}") from None
    return loaded.content_hash, loaded.vocab_size


def tokenizer_register(
    *, name: str, source_kind: str, source_path: str = "", model_path: str = ""
) -> Tokenizer:
    """Register a tokenizer with the content hash and vocabulary size it has now (and its
    model, checked by ``tokenizer_model_check``)."""
    content_hash, vocab_size = tokenizer_inspect(source_kind=source_kind, source_path=source_path)
    if model_path:
        tokenizer_model_check(model_path, content_hash=content_hash, vocab_size=vocab_size)
    return _tokenizer_store(
        name=name,
        source_kind=source_kind,
        source_path="" if source_kind == Tokenizer.Source.DEFAULT else source_path,
        content_hash=content_hash,
        vocab_size=vocab_size,
        model_path=model_path,
    )


def tokenizer_model_check(model_path: str, *, content_hash: str, vocab_size: int) -> None:
    """Refuse, with a clear message, a model directory that cannot assist detection with
    this tokenizer: no config or weights, a smaller vocabulary, or a tokenizer of its own
    that differs from this one."""
    from detector.reading.model import ModelDirError, check_model_dir

    if model_path != EMBEDDED_MODEL and not Path(model_path).expanduser().is_absolute():
        raise RegistryError("a model directory must be an absolute path on the server")
    try:
        path = check_model_dir(model_dir_of(model_path), vocab_size=vocab_size)
    except (ModelDirError, OSError) as exc:
        raise RegistryError(f"model directory refused: {exc}") from None
    if (path / "tokenizer.json").is_file():
        try:
            own = load_tokenizer(path).content_hash
        except (OSError, ValueError) as exc:
            raise RegistryError(
                f"the model directory's tokenizer cannot be loaded: {exc}"
            ) from None
        if own != content_hash:
            raise RegistryError(
                "the model directory's tokenizer differs from this tokenizer: it is another model's"
            )


def tokenizer_model_set(tokenizer: Tokenizer, model_path: str) -> Tokenizer:
    """Register (or, with "", remove) the model of a registered tokenizer."""
    model_path = model_path.strip()
    if model_path:
        tokenizer_model_check(
            model_path, content_hash=tokenizer.content_hash, vocab_size=tokenizer.vocab_size
        )
    tokenizer.model_path = model_path
    tokenizer.save(update_fields=["model_path"])
    return tokenizer


def _tokenizer_store(**fields: Any) -> Tokenizer:
    if Tokenizer.objects.filter(name=fields["name"]).exists():
        raise RegistryError(f"a tokenizer named {fields['name']!r} is already registered")
    return Tokenizer.objects.create(**fields)


def tokenizer_builtin(name: str) -> Tokenizer:
    """The registry row of a mistral-common built-in (registered under its name on first use)."""
    existing = Tokenizer.objects.filter(
        source_kind=Tokenizer.Source.BUILTIN, source_path=name
    ).first()
    if existing is not None:
        return existing
    return tokenizer_register(name=name, source_kind=Tokenizer.Source.BUILTIN, source_path=name)


# Text an uploaded tokenizer must encode and decode back unchanged before it is accepted:
# prose, code and whitespace (every tokenizer that detection can use gets these right).
ROUND_TRIP_SAMPLE = (
    "Provenance checks whether a text carries a watermark. It's 2026; 42 keys, 3.5% done.\n"
    "def score(tokens):\n    return sum(t for t in tokens if t > 0)  # comment\n"
)


def tokenizer_upload(*, name: str, content: bytes) -> Tokenizer:
    """Accept a Hugging Face ``tokenizer.json`` (bytes): parse it, check it round-trips
    ``ROUND_TRIP_SAMPLE``, store it under ``<data dir>/tokenizers/uploads/<sha256>/`` and
    register it with its content hash and vocabulary size. Nothing is kept on refusal."""
    if not name or len(name) > 100:
        raise RegistryError("a tokenizer needs a name of 1 to 100 characters")
    tokenizer_upload_validate(content)
    relative = f"uploads/{hashlib.sha256(content).hexdigest()}"
    directory = settings.DATA_DIR / "tokenizers" / relative
    _write_once(directory / "tokenizer.json", content)
    loaded = load_tokenizer(directory)
    return _tokenizer_store(
        name=name,
        source_kind=Tokenizer.Source.UPLOAD,
        source_path=relative,
        content_hash=loaded.content_hash,
        vocab_size=loaded.vocab_size,
    )


def tokenizer_upload_validate(content: bytes) -> None:
    """Refuse, with a clear message, a file that cannot serve as a detection tokenizer."""
    limit = settings.PROVENANCE_MAX_TOKENIZER_BYTES
    if len(content) > limit:
        raise PayloadTooLarge(f"the tokenizer file is {len(content)} bytes; the limit is {limit}")
    _check_round_trip(_parse_tokenizer_json(content))


def _parse_tokenizer_json(content: bytes) -> Any:
    from tokenizers import Tokenizer as Backend

    try:
        backend = Backend.from_str(content.decode("utf-8"))
    except UnicodeDecodeError:
        raise RegistryError("the tokenizer file is not UTF-8 JSON") from None
    except Exception as exc:  # the Rust parser raises plain Exception with a serde message
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise RegistryError(f"not a Hugging Face tokenizer.json: {reason}") from None
    if backend.get_vocab_size(with_added_tokens=True) < 2:
        raise RegistryError("the tokenizer has an empty vocabulary")
    return backend


def _check_round_trip(backend: Any) -> None:
    ids = backend.encode(ROUND_TRIP_SAMPLE, add_special_tokens=False).ids
    decoded = backend.decode(ids, skip_special_tokens=False)
    if decoded != ROUND_TRIP_SAMPLE:
        raise RegistryError(
            "the tokenizer does not round-trip text (decoding its ids of a sample gives "
            f"{decoded[:60]!r}...): detection needs the model's own lossless tokenizer"
        )


def _write_once(path: Path, content: bytes) -> None:
    """Write ``path`` atomically; an existing file has the same content (named by its hash)."""
    if path.is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def tokenizer_default() -> Tokenizer:
    """The embedded SmolLM2 tokenizer's row, registered on first use."""
    existing = Tokenizer.objects.filter(source_kind=Tokenizer.Source.DEFAULT).first()
    if existing is not None:
        return existing
    # Its model is the embedded SmolLM2, known to match: registered without loading it (the
    # conversion happens on a worker's first use, not in a request).
    content_hash, vocab_size = tokenizer_inspect(source_kind=Tokenizer.Source.DEFAULT)
    return _tokenizer_store(
        name="SmolLM2-135M",
        source_kind=Tokenizer.Source.DEFAULT,
        source_path="",
        content_hash=content_hash,
        vocab_size=vocab_size,
        model_path=EMBEDDED_MODEL,
    )


@sensitive_variables("value", "secret")  # hidden from Django's error reports
def key_create(
    *,
    name: str,
    team: Team,
    tokenizer: Tokenizer,
    value: str | int | None = None,
    algorithm: str = DEFAULT_ALGORITHM,
    alpha: float = DEFAULT_ALPHA,
    context_width: int = DEFAULT_CONTEXT_WIDTH,
    deduplicate: bool = True,
    shared: bool = False,
    created_by: User | None = None,
    rotated_from: WatermarkKey | None = None,
) -> tuple[WatermarkKey, int]:
    """Register a key; returns the row and the value, which is never readable again.

    The plain value stays in this frame: only ciphertext goes further down (the frame of a
    transaction wrapper would otherwise show it in an error report)."""
    secret = parse_key_value(value)
    key = _key_store(
        name=name,
        team=team,
        tokenizer=tokenizer,
        ciphertext=encrypt_value(secret),
        algorithm=algorithm,
        alpha=alpha,
        context_width=context_width,
        deduplicate=deduplicate,
        shared=shared,
        created_by=created_by,
        rotated_from=rotated_from,
    )
    return key, secret


@transaction.atomic
def _key_store(
    *,
    name: str,
    team: Team,
    tokenizer: Tokenizer,
    ciphertext: bytes,
    algorithm: str = DEFAULT_ALGORITHM,
    alpha: float = DEFAULT_ALPHA,
    context_width: int = DEFAULT_CONTEXT_WIDTH,
    deduplicate: bool = True,
    shared: bool = False,
    created_by: User | None = None,
    rotated_from: WatermarkKey | None = None,
) -> WatermarkKey:
    _validate_config(algorithm, alpha, context_width, deduplicate)
    if shared and not (rotated_from is not None and rotated_from.shared):
        shared_room()
    if WatermarkKey.objects.filter(team=team, name=name).exists():
        raise RegistryError(f"team {team.name!r} already has a key named {name!r}")
    return WatermarkKey.objects.create(
        name=name,
        team=team,
        tokenizer=tokenizer,
        algorithm=algorithm,
        alpha=alpha,
        context_width=context_width,
        deduplicate=deduplicate,
        shared=shared,
        encrypted_value=ciphertext,
        created_by=created_by,
        rotated_from=rotated_from,
    )


def shared_room() -> None:
    """Refuse a new shared key past ``PROVENANCE_MAX_SHARED_KEYS`` active ones: each is a
    hypothesis in every team's family (more work per check, a stricter correction). A
    rotation replaces an active key by another and needs no room; the retired shared keys it
    leaves behind share what room the active ones leave, and ``selectors.key_family`` never
    puts more than the cap of other teams' keys into a family."""
    limit = settings.PROVENANCE_MAX_SHARED_KEYS
    active = WatermarkKey.objects.filter(shared=True, status=WatermarkKey.Status.ACTIVE)
    if active.count() >= limit:
        raise RegistryError(f"at most {limit} active keys may be shared", status_code=409)


def _validate_config(algorithm: str, alpha: float, context_width: int, deduplicate: bool) -> None:
    """Refuse settings the one key model refuses (checked with a dummy key: no secret here)."""
    try:
        registry_config(
            value=0,
            algorithm=algorithm,
            alpha=alpha,
            context_width=context_width,
            deduplicate=deduplicate,
        )
    except ValueError as exc:
        raise RegistryError(str(exc)) from None


@transaction.atomic
def key_retire(*, key: WatermarkKey) -> WatermarkKey:
    """Stop using a key for new text; it keeps detecting old text."""
    key.status = WatermarkKey.Status.RETIRED
    key.retired_at = key.retired_at or timezone.now()
    key.save(update_fields=["status", "retired_at"])
    return key


@transaction.atomic
def key_rotate(*, key: WatermarkKey, created_by: User | None = None) -> tuple[WatermarkKey, int]:
    """Retire ``key`` and register a fresh random value with the same configuration."""
    if key.status != WatermarkKey.Status.ACTIVE:
        raise RegistryError("only an active key can be rotated")
    key_retire(key=key)
    rotated, value = key_create(
        name=_rotated_name(key),
        team=key.team,
        tokenizer=key.tokenizer,
        algorithm=key.algorithm,
        alpha=key.alpha,
        context_width=key.context_width,
        deduplicate=key.deduplicate,
        shared=key.shared,
        created_by=created_by,
        rotated_from=key,
    )
    if key.content_credentials:  # its replies keep their Content Credentials
        rotated.content_credentials = True
        rotated.save(update_fields=["content_credentials"])
    return rotated, value


def _rotated_name(key: WatermarkKey) -> str:
    """``<first name>-rotated-<UTC stamp>``, unique in the team (a later rotation in the
    same second gets ``-2``, ``-3``...): names do not grow with each rotation."""
    base = key.name.split("-rotated-", 1)[0][:70]
    name = f"{base}-rotated-{timezone.now().strftime('%Y%m%d%H%M%S')}"
    taken = set(
        WatermarkKey.objects.filter(team=key.team, name__startswith=name).values_list(
            "name", flat=True
        )
    )
    suffix = 1
    candidate = name
    while candidate in taken:
        suffix += 1
        candidate = f"{name}-{suffix}"
    return candidate


ENCRYPTED_PREFIX = "encrypted_"  # a binary field named so holds a value under the KEK


def encrypted_fields() -> list[tuple[type[models.Model], str]]:
    """Every field that holds a value under the KEK, in every installed model: binary fields
    named ``encrypted_*`` (watermark keys, signing keys, webhook secrets, any added later)."""
    return [
        (model, field.name)
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if isinstance(field, models.BinaryField) and field.name.startswith(ENCRYPTED_PREFIX)
    ]


def encrypted_reencrypt() -> int:
    """Re-encrypt every value of every ``encrypted_fields`` under the first configured KEK
    (KEK rotation); run it in a transaction: a value that does not decrypt aborts the run."""
    count = 0
    for model, name in encrypted_fields():
        for pk, token in model._default_manager.select_for_update().values_list("pk", name):
            if token is None:
                continue
            model._default_manager.filter(pk=pk).update(**{name: reencrypt(token)})
            count += 1
    return count


def key_publish(*, key: WatermarkKey, public_name: str = "") -> WatermarkKey:
    """Publish ``key`` for public verification under ``public_name`` (default: the key's
    public name if it has one, else its name)."""
    name = (public_name or key.public_name or key.name).strip()
    if not name or len(name) > 200:
        raise ProblemError("a public name is 1 to 200 characters")
    published = WatermarkKey.objects.filter(published_at__isnull=False, public_name=name)
    taken = published.exclude(pk=key.pk).exists()
    if taken:
        raise Conflict(f"another published key is named {name!r}")
    key.public_name = name
    key.published_at = key.published_at or timezone.now()
    key.save(update_fields=["public_name", "published_at"])
    return key


def key_unpublish(*, key: WatermarkKey) -> WatermarkKey:
    key.published_at = None
    key.save(update_fields=["published_at"])
    return key
