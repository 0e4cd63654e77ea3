from django.apps import AppConfig


class OffsetsConfig(AppConfig):
    name = "offsets"
    verbose_name = "Kafka Connect offsets"

    def ready(self) -> None:
        # The offset-edit admin pages, kept in their own module beside the feature.
        from offsets import admin_edits  # noqa: F401
