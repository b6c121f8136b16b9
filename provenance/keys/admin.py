"""Admin for the registry. Key values: typed (or generated) in the add form, shown once on
the page that answers it, never in lists or change forms. Django's model permissions decide
who sees or changes keys."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_post_parameters

from provenance.accounts.auth import signed_in
from provenance.errors import ProblemError
from provenance.keys import calibration, services
from provenance.keys.models import GenreRate, KeyCalibration, Tokenizer, WatermarkKey
from provenance.keys.selectors import latest_calibrations

# Where save_model leaves the new key and its value for response_add, on the request.
_CREATED = "_provenance_created"


class TokenizerForm(forms.ModelForm):
    upload = forms.FileField(
        required=False,
        label=_("tokenizer.json"),
        help_text=_(
            "For “Uploaded tokenizer.json”: a Hugging Face tokenizer.json. It must "
            "encode and decode a sample text back unchanged; it is stored under the data dir."
        ),
    )

    class Meta:
        model = Tokenizer
        fields = ["name", "source_kind", "source_path", "model_path"]
        help_texts = {
            "source_path": _(
                "A directory or .gguf path on the server, or a built-in's name "
                "(mistral-v3, mistral-tekken). Empty for the embedded default and uploads."
            )
        }

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.instance.pk is None and not self.errors:
            try:  # load it once here so a bad source is a form error, not a 500
                self._inspect(data)
            except ProblemError as exc:
                raise forms.ValidationError(exc.message) from None
        elif self.instance.pk is not None and not self.errors and data.get("model_path"):
            try:  # a model registered later is checked against the stored tokenizer
                services.tokenizer_model_check(
                    data["model_path"],
                    content_hash=self.instance.content_hash,
                    vocab_size=self.instance.vocab_size,
                )
            except ProblemError as exc:
                raise forms.ValidationError({"model_path": exc.message}) from None
        return data

    def _inspect(self, data: dict[str, Any]) -> None:
        if data["source_kind"] != Tokenizer.Source.UPLOAD:
            content_hash, vocab_size = services.tokenizer_inspect(
                source_kind=data["source_kind"], source_path=data.get("source_path", "")
            )
            if data.get("model_path"):
                services.tokenizer_model_check(
                    data["model_path"], content_hash=content_hash, vocab_size=vocab_size
                )
            return
        upload = data.get("upload")
        if upload is None:
            raise services.RegistryError("choose a tokenizer.json file to upload")
        data["upload_content"] = upload.read()
        services.tokenizer_upload_validate(data["upload_content"])
        if data.get("model_path"):
            raise services.RegistryError(
                "register the model of an uploaded tokenizer after the upload (edit it)"
            )


@admin.register(Tokenizer)
class TokenizerAdmin(admin.ModelAdmin):
    form = TokenizerForm
    list_display = ["name", "source_kind", "vocab_size", "short_hash", "has_model", "created_at"]
    list_filter = ["source_kind"]
    search_fields = ["name", "source_path", "content_hash"]
    readonly_fields = ["content_hash", "vocab_size", "created_at"]

    @admin.display(description=_("content hash"))
    def short_hash(self, obj: Tokenizer) -> str:
        return obj.content_hash[:12]

    @admin.display(description=_("model"), boolean=True)
    def has_model(self, obj: Tokenizer) -> bool:
        return obj.has_model

    def get_readonly_fields(self, request: HttpRequest, obj: Tokenizer | None = None) -> list:
        # The hash pins what keys were tested with: a registered source cannot change.
        if obj is not None:
            return [*self.readonly_fields, "source_kind", "source_path"]
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Tokenizer, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)  # model_path checked in clean
            return
        if obj.source_kind == Tokenizer.Source.UPLOAD:
            content = form.cleaned_data["upload_content"]
            registered = services.tokenizer_upload(name=obj.name, content=content)
        else:
            registered = services.tokenizer_register(
                name=obj.name,
                source_kind=obj.source_kind,
                source_path=obj.source_path,
                model_path=obj.model_path,
            )
        obj.pk = registered.pk
        obj.content_hash, obj.vocab_size = registered.content_hash, registered.vocab_size
        obj.source_path = registered.source_path


class KeyAddForm(forms.ModelForm):
    value = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text=_("Decimal or 0x-hex, 0 <= key < 2^64. Leave empty to generate a random key."),
    )

    class Meta:
        model = WatermarkKey
        fields = [
            "name",
            "team",
            "shared",
            "tokenizer",
            "algorithm",
            "alpha",
            "context_width",
            "deduplicate",
        ]

    def clean_value(self) -> int:
        try:
            return services.parse_key_value(self.cleaned_data.get("value"))
        except services.RegistryError as exc:
            raise forms.ValidationError(exc.message) from None


@admin.register(WatermarkKey)
class WatermarkKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "team",
        "shared",
        "algorithm",
        "context_width",
        "tokenizer",
        "status",
        "created_at",
    ]
    list_filter = ["status", "algorithm", "shared", "team", "tokenizer"]
    search_fields = ["name", "team__name", "tokenizer__name"]
    readonly_fields = [
        "public_id",
        "status",
        "rotated_from",
        "created_by",
        "created_at",
        "retired_at",
        "measured_fpr",
        "assisted_fpr",
        "power_curve",
    ]
    fields = [
        "name",
        "team",
        "shared",
        "tokenizer",
        "algorithm",
        "alpha",
        "context_width",
        "deduplicate",
        "public_name",
        "content_credentials",
        *readonly_fields,
        "published_at",
    ]
    actions = ["rotate_keys", "retire_keys", "calibrate_keys", "publish_keys", "unpublish_keys"]

    @admin.display(description=_("measured false-positive rate"))
    def measured_fpr(self, obj: WatermarkKey) -> str:
        run = latest_calibrations([obj]).get(obj.id)
        if run is None:
            return str(_("not calibrated yet (action “Calibrate”)"))
        rows = format_html_join(
            "",
            "<li>{}: {}/{} = {} (95% CI {}–{}){}</li>",
            (
                (
                    r.genre,
                    r.flagged,
                    r.texts,
                    f"{r.rate:.2%}",
                    f"{r.ci_low:.2%}",
                    f"{r.ci_high:.2%}",
                    " FLAGGED: above the threshold" if r.above_threshold else "",
                )
                for r in run.rates.all()
            ),
        )
        when = run.finished_at.strftime("%Y-%m-%d %H:%M UTC") if run.finished_at else ""
        return format_html("<ul>{}</ul>threshold {}, measured {}", rows, run.threshold, when)

    @admin.display(description=_("model-assisted false-positive rate"))
    def assisted_fpr(self, obj: WatermarkKey) -> str:
        run = latest_calibrations([obj]).get(obj.id)
        if run is None:
            return "-"
        genres = run.assisted.get("genres")
        if not genres:
            return str(run.assisted.get("note", "-"))
        rows = format_html_join(
            "",
            "<li>{}: {}/{} = {} (95% CI {}–{}){}</li>",
            (
                (
                    genre,
                    r["flagged"],
                    r["texts"],
                    f"{r['rate']:.2%}",
                    f"{r['ci_low']:.2%}",
                    f"{r['ci_high']:.2%}",
                    " FLAGGED: above the threshold" if r["above_threshold"] else "",
                )
                for genre, r in genres.items()
            ),
        )
        return format_html("<ul>{}</ul>{}", rows, run.assisted.get("note", ""))

    @admin.display(description=_("power curve"))
    def power_curve(self, obj: WatermarkKey) -> str:
        run = latest_calibrations([obj]).get(obj.id)
        if run is None or not run.power:
            return run.power_note if run is not None else "-"
        return format_html_join(
            "",
            "<div>T={} top-p {}: 80% power at {} tokens ({} scored); {}</div>",
            (
                (
                    label,
                    e["top_p"],
                    e["tokens_needed"] or f"more than {run.power_tokens}",
                    e["scored_tokens_needed"] or "-",
                    ", ".join(f"{p['tokens']}: {p['detected']}/{p['texts']}" for p in e["points"]),
                )
                for label, e in run.power.items()
            ),
        )

    @admin.action(
        description=_("Calibrate: measure false-positive rates and power"), permissions=["change"]
    )
    def calibrate_keys(self, request: HttpRequest, queryset: QuerySet[WatermarkKey]) -> None:
        for key in queryset:
            calibration.calibration_request(key=key, requested_by=signed_in(request.user))
        self.message_user(
            request,
            _("Queued %(n)s calibration(s); a worker runs them.") % {"n": queryset.count()},
            messages.SUCCESS,
        )

    @method_decorator(sensitive_post_parameters("value"))
    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None):
        return super().add_view(request, form_url, extra_context)

    def get_form(
        self,
        request: HttpRequest,
        obj: WatermarkKey | None = None,
        change: bool = False,
        **kwargs: Any,
    ) -> type[forms.ModelForm[Any]]:
        if obj is None:
            kwargs["form"] = KeyAddForm
            kwargs["fields"] = [*KeyAddForm.Meta.fields, "value"]
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request: HttpRequest, obj: WatermarkKey | None = None) -> list:
        return [*KeyAddForm.Meta.fields, "value"] if obj is None else self.fields

    def get_readonly_fields(self, request: HttpRequest, obj: WatermarkKey | None = None) -> list:
        may_share = request.user.has_perm("keys.share_watermarkkey")
        if obj is None:
            return [] if may_share else ["shared"]
        # What a key detects is fixed at creation: rotate instead of editing.
        return [
            *([] if may_share else ["shared"]),
            *self.readonly_fields,
            "published_at",
            "team",
            "tokenizer",
            "algorithm",
            "alpha",
            "context_width",
            "deduplicate",
        ]

    def save_model(self, request: HttpRequest, obj: WatermarkKey, form: Any, change: bool):
        if change:
            if "shared" in form.changed_data and obj.shared:
                services.shared_room()
            return super().save_model(request, obj, form, change)
        data = form.cleaned_data
        key, value = services.key_create(
            name=data["name"],
            team=data["team"],
            tokenizer=data["tokenizer"],
            value=data["value"],
            algorithm=data["algorithm"],
            alpha=data["alpha"],
            context_width=data["context_width"],
            deduplicate=data["deduplicate"],
            shared=data.get("shared", False),
            created_by=signed_in(request.user),
        )
        obj.pk = key.pk
        request.__dict__[_CREATED] = (key, value)  # read once by response_add

    def response_add(self, request: HttpRequest, obj: WatermarkKey, post_url_continue=None):
        key, value = request.__dict__.pop(_CREATED)
        return self._shown_once(request, key, value)

    def _shown_once(self, request: HttpRequest, key: WatermarkKey, value: int) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "key": key,
            "value": value,
            "title": _("Key registered"),
            "opts": self.model._meta,
        }
        response = TemplateResponse(request, "admin/keys/key_created.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(
        description=_("Publish for public verification (under its public name, else its name)"),
        permissions=["change"],
    )
    def publish_keys(self, request: HttpRequest, queryset: QuerySet[WatermarkKey]) -> None:
        for key in queryset:
            try:
                services.key_publish(key=key)
            except ProblemError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return
        self.message_user(
            request, _("Published %(n)s key(s).") % {"n": queryset.count()}, messages.SUCCESS
        )

    @admin.action(description=_("Unpublish (public verification)"), permissions=["change"])
    def unpublish_keys(self, request: HttpRequest, queryset: QuerySet[WatermarkKey]) -> None:
        for key in queryset:
            services.key_unpublish(key=key)
        self.message_user(
            request, _("Unpublished %(n)s key(s).") % {"n": queryset.count()}, messages.SUCCESS
        )

    @admin.action(description=_("Rotate: retire and register a fresh value"), permissions=["add"])
    def rotate_keys(self, request: HttpRequest, queryset: QuerySet[WatermarkKey]):
        active = list(queryset.filter(status=WatermarkKey.Status.ACTIVE))
        if len(active) != 1:
            self.message_user(request, _("Rotate one active key at a time."), messages.ERROR)
            return None
        key, value = services.key_rotate(key=active[0], created_by=signed_in(request.user))
        return self._shown_once(request, key, value)

    @admin.action(description=_("Retire (keeps detecting old text)"), permissions=["change"])
    def retire_keys(self, request: HttpRequest, queryset: QuerySet[WatermarkKey]) -> None:
        for key in queryset:
            services.key_retire(key=key)
        self.message_user(
            request, _("Retired %(n)s key(s).") % {"n": queryset.count()}, messages.SUCCESS
        )


class GenreRateInline(admin.TabularInline):
    model = GenreRate
    extra = 0
    can_delete = False
    readonly_fields = (
        "genre",
        "texts",
        "flagged",
        "rate",
        "ci_low",
        "ci_high",
        "above_threshold",
        "corpus",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(KeyCalibration)
class KeyCalibrationAdmin(admin.ModelAdmin):
    """Calibrations are written by the worker: read-only here."""

    list_display = ["key", "status", "threshold", "texts_per_genre", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["key__name"]
    inlines = [GenreRateInline]
    readonly_fields = (
        "key",
        "status",
        "failure_reason",
        "threshold",
        "texts_per_genre",
        "chunk_tokens",
        "power_prompts",
        "power_tokens",
        "power",
        "power_note",
        "requested_by",
        "created_at",
        "started_at",
        "finished_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
