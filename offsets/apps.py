from django.apps import AppConfig


class OffsetsConfig(AppConfig):
    name = "offsets"
    verbose_name = "Kafka Connect offsets"

    def ready(self) -> None:
        # The offset-edit and alert admin pages, kept in their own modules beside the features.
        from offsets import admin_alerts, admin_edits  # noqa: F401
