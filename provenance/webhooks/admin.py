"""Admin: a team's webhook (default callback URL; the signing secret is generated on save and
shown once, then only rotated) and the log of deliveries (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _

from provenance.errors import ProblemError
from provenance.webhooks import services
from provenance.webhooks.models import TeamWebhook, WebhookDelivery

# Where save_model leaves the new secret for response_add, on the request.
_SECRET = "_provenance_secret"


@admin.register(TeamWebhook)
class TeamWebhookAdmin(admin.ModelAdmin):
    list_display = ["team", "default_url", "secret_created_at"]
    fields = ["team", "default_url", "secret_created_at"]
    readonly_fields = ["secret_created_at"]
    actions = ["rotate_secret"]

    def save_model(self, request: HttpRequest, obj: TeamWebhook, form: Any, change: bool) -> None:
        if obj.default_url:
            try:
                services.callback_url_validate(obj.default_url)
            except ProblemError as exc:
                self.message_user(request, exc.message, messages.WARNING)
        if change:
            super().save_model(request, obj, form, change)
            return
        webhook, secret = services.webhook_secret_rotate(team=obj.team)
        webhook.default_url = obj.default_url
        webhook.save(update_fields=["default_url"])
        obj.pk = webhook.pk
        request.__dict__[_SECRET] = secret  # read once by response_add

    def response_add(self, request: HttpRequest, obj: TeamWebhook, post_url_continue=None):
        secret = request.__dict__.pop(_SECRET)
        return self._shown_once(request, obj, secret)

    def _shown_once(self, request: HttpRequest, webhook: TeamWebhook, secret: str) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "webhook": webhook,
            "secret": secret,
            "title": _("Webhook signing secret"),
            "opts": self.model._meta,
        }
        response = TemplateResponse(request, "admin/webhooks/secret_created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description=_("Rotate the signing secret (shown once)"), permissions=["change"])
    def rotate_secret(self, request: HttpRequest, queryset: QuerySet[TeamWebhook]):
        if queryset.count() != 1:
            self.message_user(request, _("Rotate one team's secret at a time."), messages.ERROR)
            return None
        webhook, secret = services.webhook_secret_rotate(team=queryset.get().team)
        return self._shown_once(request, webhook, secret)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "team", "event", "url", "status", "attempts", "last_status_code"]
    list_filter = ["status", "event", "team"]
    search_fields = ["url", "audit__id"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
