"""Django's PostgreSQL backend with a health check that costs no round trip
(``DATABASES["default"]["ENGINE"] = "provenance.lib.postgresql"``, set by the settings)."""
