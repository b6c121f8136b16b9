"""What Django's error pages and error e-mails may show of the settings and the request.

Django's own filter hides settings named like API, AUTH, TOKEN, KEY, SECRET, PASS or
SIGNATURE. The key-encryption key (``PROVENANCE_KEK``), broker and cache URLs and every
nested ``LOCATION`` carry secrets under other names, and a URL may carry a password in any
setting: both are hidden here."""

from __future__ import annotations

import re
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

# A URL with a password in its user info: scheme://user:password@host (or :password@host).
_CREDENTIAL_URL = re.compile(r"[a-z][a-z0-9+.-]*://[^/\s@]*:[^/\s@]*@", re.I)


class SecretsHiddenFilter(SafeExceptionReporterFilter):
    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|KEK|URL|LOCATION|BROKER|DSN",
        flags=re.I,
    )

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        if isinstance(value, str) and _CREDENTIAL_URL.search(str(value)):
            return self.cleansed_substitute
        return super().cleanse_setting(key, value)
