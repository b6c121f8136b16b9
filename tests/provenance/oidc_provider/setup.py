"""Prepare the test provider's database: migrate, a signing key, the app as a client
(redirect URI from argv), and the people: alice (in a group mapped to a team, the
playground group and the team admins' group) and mallory (only in an unmapped group)."""

from __future__ import annotations

import sys

PASSWORD = "op-pass-123"
PEOPLE = {
    "alice": ["essays", "essays-admins", "playground-users"],
    "mallory": ["marketing"],
}


def main(redirect_uri: str, client_id: str, client_secret: str) -> None:
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from oidc_provider.models import Client, ResponseType

    call_command("migrate", verbosity=0)
    call_command("creatersakey")
    client = Client.objects.create(
        name="provenance",
        client_type="confidential",
        client_id=client_id,
        client_secret=client_secret,
        jwt_alg="RS256",
        require_consent=False,
        redirect_uris=[redirect_uri],
        scope=["openid", "email", "profile", "groups"],
    )
    client.response_types.add(ResponseType.objects.get(value="code"))
    for name, groups in PEOPLE.items():
        user = User.objects.create_user(name, f"{name}@example.org", PASSWORD)
        for group in groups:
            user.groups.add(Group.objects.get_or_create(name=group)[0])


if __name__ == "__main__":
    main(*sys.argv[1:4])
