from django.apps import AppConfig


class SoftbindingConfig(AppConfig):
    name = "provenance.softbinding"
    label = "softbinding"
    verbose_name = "Content Credentials resolution"
    default_auto_field = "django.db.models.BigAutoField"
