from django.apps import AppConfig


class OffsetsConfig(AppConfig):
    name = "offsets"
    verbose_name = "Kafka Connect offsets"
