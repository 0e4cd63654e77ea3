from django.apps import AppConfig


class DevkitConfig(AppConfig):
    name = "devkit"
    verbose_name = "Development kit"
