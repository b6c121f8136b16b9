"""A user made inactive (in the admin, by a script, by the organization sign-in) loses every
API token and session at the moment of the save, so reactivating the account later does not
bring an old credential back."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_save
from django.dispatch import receiver

from provenance.accounts.services import user_credentials_revoke


@receiver(post_save, sender=get_user_model(), dispatch_uid="provenance-deactivated-user")
def deactivated_user_signed_out(
    sender: Any, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any
) -> None:
    if instance.is_active or (update_fields is not None and "is_active" not in update_fields):
        return
    user_credentials_revoke(user=instance)
