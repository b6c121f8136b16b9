"""Playground pages: conversations, the chat page, the reply stream (SSE), check and
edit-and-check. Thin: parse, call one service or selector, render."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required, permission_required
from django.http import (
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from detector.evidence import stream
from provenance.accounts.auth import AuthenticatedHttpRequest
from provenance.accounts.selectors import is_auditor
from provenance.checks import tiers
from provenance.errors import ProblemError
from provenance.playground import selectors, services

PERMISSION = "playground.use_playground"


def playground_view(view: Any) -> Any:
    """Logged in (else the login page) and holding the permission (else 403)."""
    return login_required(permission_required(PERMISSION, raise_exception=True)(view))


@playground_view
def conversation_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    if request.method == "POST":
        try:
            conversation = services.conversation_create(user=request.user)
        except ProblemError as exc:
            return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
        return redirect("playground-conversation", conversation_id=conversation.pk)
    conversations = selectors.conversations_for_user(request.user)[:100]
    return render(request, "playground/index.html", {"conversations": conversations})


@playground_view
def conversation_detail(
    request: AuthenticatedHttpRequest, conversation_id: uuid.UUID
) -> HttpResponse:
    conversation = selectors.conversation_get(request.user, conversation_id)
    messages = list(selectors.conversation_messages(conversation))
    if not is_auditor(request.user):  # a reply stored under the auditor tier: round it now
        for message in messages:
            message.log10_p = tiers.round_log10(message.log10_p)  # in memory only
    context = {
        "conversation": conversation,
        "messages": messages,
        "keys": selectors.playground_keys(request.user),
        "limits": services.sampling_limits(),
        # the line the e-process flags at, as the detector draws it
        "threshold_log10": f"{stream.flag_line_log10(settings.PROVENANCE_THRESHOLD):.1f}",
    }
    return render(request, "playground/conversation.html", context)


@require_POST
@playground_view
def reply_create(request: AuthenticatedHttpRequest, conversation_id: uuid.UUID) -> HttpResponseBase:
    """Start a reply and stream it as server-sent events (errors before the stream: JSON)."""
    conversation = selectors.conversation_get(request.user, conversation_id)
    form = request.POST
    try:
        message = services.reply_start(
            user=request.user,
            conversation=conversation,
            content=form.get("content", ""),
            key_id=form.get("key"),
            watermark=form.get("watermark") == "on",
            sampling=services.Sampling.parse(
                form.get("temperature"), form.get("top_p"), form.get("max_tokens")
            ),
        )
    except ProblemError as exc:
        return JsonResponse({"error": exc.message}, status=exc.status_code)
    response = StreamingHttpResponse(_sse(services.reply_stream(message)))
    response["Content-Type"] = "text/event-stream"
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy must pass tokens on as they come
    return response


def _sse(events: Iterator[dict[str, Any]]) -> Iterator[bytes]:
    try:
        for event in events:
            if event["type"] == "done":
                event["check_url"] = reverse("playground-check", args=[event["message"]])
                event["edit_url"] = reverse("playground-edit", args=[event["message"]])
            yield f"data: {json.dumps(event)}\n\n".encode()
    finally:
        events.close()  # type: ignore[attr-defined]  # the client left: stop the generator


@require_POST
@playground_view
def reply_check(request: AuthenticatedHttpRequest, message_id: uuid.UUID) -> HttpResponse:
    message = selectors.message_get(request.user, message_id)
    text = request.POST.get("text")
    try:
        check = services.reply_check(user=request.user, message=message, text=text)
    except ProblemError as exc:
        context = {"message": message, "text": text or message.content, "error": exc.message}
        return render(request, "playground/edit.html", context, status=exc.status_code)
    return redirect("check-detail", check_id=check.pk)


@playground_view
def reply_edit(request: AuthenticatedHttpRequest, message_id: uuid.UUID) -> HttpResponse:
    message = selectors.message_get(request.user, message_id)
    return render(request, "playground/edit.html", {"message": message, "text": message.content})
