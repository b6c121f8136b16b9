"""No Celery tasks: a reply streams within its web request (bounded by the client's
timeouts), and checks of replies go through ``provenance.checks``' own tasks."""
