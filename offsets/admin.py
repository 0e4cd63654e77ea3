from django.contrib import admin

from offsets.models import Cluster


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "bootstrap_servers", "offsets_topic", "configs_topic", "status_topic"]
    search_fields = ["name", "bootstrap_servers"]
    readonly_fields = ["created", "updated"]
