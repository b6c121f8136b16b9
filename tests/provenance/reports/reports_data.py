"""A check scored here, for the report tests: alice's text checked against her key."""

from __future__ import annotations

from provenance.checks.services import check_score


def scored_check(client, text: str) -> str:
    check_id = client.post("/api/v1/checks", {"text": text}, format="json").json()["id"]
    check_score(check_id)
    return check_id
