"""The WSGI application. Under ``PROVENANCE_WEB_PRELOAD=1`` (the embedded runner's gunicorn,
``--preload``) the master also imports the views and loads the tokenizers before it forks
(``provenance.preload``)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

from provenance import env as environment

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "provenance.settings")
application = get_wsgi_application()

if environment.web_preload():
    from provenance.preload import preload

    preload(tokenizers=True)
