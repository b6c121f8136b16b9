"""``/verify/``: the public page, no login. The page's script (``public/verify.js``, a static
file: the CSP forbids inline script) fetches a challenge, solves it in the browser and posts
the text to the public API."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from detector.decision import combined
from provenance.public import selectors


@require_GET
def verify_page(request: HttpRequest) -> HttpResponse:
    models = [key.public_name for key in selectors.published_keys()]
    # the combined claim's correction, as the library names it (the answer's ``correction``)
    context = {"models": models, "combined_correction": combined.CORRECTION}
    return render(request, "public/verify.html", context)
