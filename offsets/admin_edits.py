"""Admin views of offset edits and the audit log: read-only, the workflow is the only writer."""

import json

from django.contrib import admin

from offsets.domain.masking import mask_secrets
from offsets.models import AuditEvent, OffsetEdit, OffsetEditChange


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class OffsetEditChangeInline(admin.TabularInline):
    model = OffsetEditChange
    fields = ["position", "partition", "before", "after", "is_new", "is_delete", "warnings"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(OffsetEdit)
class OffsetEditAdmin(ReadOnlyAdmin):
    list_display = ["id", "cluster", "connector", "strategy", "state", "created_by", "created"]
    list_filter = ["state", "connector_type", "cluster"]
    search_fields = ["connector", "comment"]
    inlines = [OffsetEditChangeInline]
    # A move's config holds the secrets its editor supplied again: shown masked, as everywhere.
    exclude = ["connector_config"]
    readonly_fields = ["masked_connector_config"]

    @admin.display(description="Connector config (secrets masked)")
    def masked_connector_config(self, edit: OffsetEdit) -> str:
        if edit.connector_config is None:
            return "-"
        return json.dumps(mask_secrets(edit.connector_config), indent=1, sort_keys=True)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["at", "actor_name", "action", "cluster", "connector", "edit"]
    list_filter = ["action", "cluster"]
    search_fields = ["connector", "actor_name", "comment"]
