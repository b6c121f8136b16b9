"""One POST through an ASGI app, as a client sends it to the generator's front end (the
bearer token in ``Authorization``), for the generator gate's tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any


def post(
    app: Any, body: dict[str, Any], token: str, path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, response body) of one POST of ``body`` as JSON through ``app``."""

    async def run() -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []
        messages = [{"type": "http.request", "body": json.dumps(body).encode()}]

        async def receive() -> dict[str, Any]:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "headers": [(b"authorization", f"Bearer {token}".encode())],
        }
        await app(scope, receive, send)
        return sent

    sent = asyncio.run(run())
    headers = {k.decode(): v.decode() for k, v in sent[0].get("headers", [])}
    content = b"".join(m.get("body", b"") for m in sent[1:])
    return int(sent[0]["status"]), headers, content
