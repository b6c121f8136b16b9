"""The history's filters, one definition for the page (``/checks/``) and the API
(``GET /api/v1/checks``): verdict, date range, best key, submitter (team admins) and a
search by check id, client id or document name. Every choice is scoped to the caller's
team, and so is the queryset they narrow (``selectors.checks_for_user``)."""

from __future__ import annotations

import re
import uuid
from datetime import date, datetime, time, timedelta
from typing import Any

import django_filters
from django import forms
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from provenance.accounts.selectors import is_team_admin, team_for_user
from provenance.checks import selectors
from provenance.checks.models import Check, Verdict
from provenance.keys.models import WatermarkKey
from provenance.keys.selectors import keys_visible_to

# A search that may be the start of a check id (hex digits and dashes, 4 at least).
_ID_PREFIX = re.compile(r"[0-9a-fA-F-]{4,36}")
MAX_SEARCH = 200


def _keys(request: HttpRequest | None) -> QuerySet[WatermarkKey]:
    user = getattr(request, "user", None)
    return keys_visible_to(team_for_user(user) if user is not None else None).order_by("name")


def _members(request: HttpRequest | None) -> QuerySet[User]:
    """The submitters an admin may pick: the members of the admin's team."""
    user = getattr(request, "user", None)
    team = team_for_user(user) if user is not None else None
    if team is None or not is_team_admin(user):
        return User.objects.none()
    return User.objects.filter(membership__team=team).order_by("username")


class _UserNameChoice(django_filters.fields.ModelChoiceField):
    """A member by user name; a NUL is refused before the lookup (PostgreSQL's text cannot
    hold one, and would fail the query instead of the choice)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise forms.ValidationError(self.error_messages["invalid_choice"], "invalid_choice")
        return super().to_python(value)


class _SubmitterFilter(django_filters.ModelChoiceFilter):
    field_class = _UserNameChoice


def _admins_only(value: Any) -> None:
    raise forms.ValidationError(
        _("only a team admin may filter by submitter"), code="permission_denied"
    )


class HistoryForm(forms.Form):
    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError(_("the start date lies after the end date"), code="invalid")
        return data


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


class CheckFilter(django_filters.FilterSet):
    verdict = django_filters.ChoiceFilter(
        choices=Verdict.choices,
        label=_("verdict"),
        empty_label=_("any verdict"),
        help_text="the three-way verdict",
    )
    since = django_filters.DateFilter(
        method="filter_since",
        label=_("submitted from"),
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="submitted on or after this day (YYYY-MM-DD, the server's time zone)",
    )
    until = django_filters.DateFilter(
        method="filter_until",
        label=_("submitted until"),
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="submitted on or before this day (YYYY-MM-DD, inclusive)",
    )
    key_id = django_filters.ModelChoiceFilter(
        field_name="best_key",
        queryset=_keys,
        label=_("best key"),
        empty_label=_("any key"),
        help_text="the id of the check's best key (the key of its strongest hypothesis)",
    )
    submitter = _SubmitterFilter(
        field_name="submitted_by",
        queryset=_members,
        to_field_name="username",
        label=_("submitter"),
        empty_label=_("anyone"),
        help_text="the submitter's user name (team admins only)",
    )
    q = django_filters.CharFilter(
        method="search",
        label=_("search"),
        max_length=MAX_SEARCH,
        widget=forms.TextInput(attrs={"type": "search"}),
        help_text="part of a client id or document name, or the start of a check id",
    )

    class Meta:
        model = Check
        fields: list[str] = []
        form = HistoryForm

    def __init__(self, data: Any = None, queryset: Any = None, *, request: Any = None, **kw: Any):
        if queryset is None:
            user = getattr(request, "user", None)
            queryset = selectors.checks_for_user(user) if user is not None else Check.objects.none()
        super().__init__(data, queryset, request=request, **kw)
        self.admin = is_team_admin(getattr(request, "user", None))
        if not self.admin:  # the field stays out of the page; a hand-made query is refused
            self.filters["submitter"] = django_filters.CharFilter(
                field_name="submitted_by", validators=[_admins_only], required=False
            )

    # A day at the calendar's ends bounds nothing (its next day, or its start in UTC, would
    # overflow the datetime range).
    def filter_since(self, queryset: QuerySet[Check], name: str, value: date) -> QuerySet[Check]:
        if value <= date.min + timedelta(days=1):
            return queryset
        return queryset.filter(created_at__gte=_day_start(value))

    def filter_until(self, queryset: QuerySet[Check], name: str, value: date) -> QuerySet[Check]:
        if value >= date.max - timedelta(days=1):
            return queryset
        return queryset.filter(created_at__lt=_day_start(value + timedelta(days=1)))

    def search(self, queryset: QuerySet[Check], name: str, value: str) -> QuerySet[Check]:
        value = value.strip()
        if not value:
            return queryset
        match = Q(client_id__icontains=value) | Q(filename__icontains=value)
        try:
            match |= Q(id=uuid.UUID(value))
        except ValueError:
            if _ID_PREFIX.fullmatch(value):
                match |= Q(id__istartswith=value)
        return queryset.filter(match)

    @property
    def active(self) -> bool:
        """Whether any filter narrows the list (the page says "no match" rather than "none")."""
        return self.is_bound and any(self.data.get(name) not in (None, "") for name in self.filters)
