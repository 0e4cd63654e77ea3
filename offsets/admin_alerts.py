"""Admin of alerts: the rules (validated on save), their subjects' states and the delivery history."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from offsets.admin_edits import ReadOnlyAdmin
from offsets.models import AlertDelivery, AlertRule, AlertState


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "enabled", "cluster", "connector_pattern", "channel", "quiet_minutes"]
    list_filter = ["enabled", "channel", "cluster"]
    search_fields = ["name", "connector_pattern"]
    readonly_fields = ["created", "updated"]
    fieldsets = [
        (None, {"fields": ["name", "enabled"]}),
        ("What it watches", {"fields": ["cluster", "connector_pattern", "pattern_syntax"]}),
        (
            "Conditions",
            {
                "fields": [
                    "on_lag",
                    "lag_statuses",
                    "on_failed",
                    "on_no_commit",
                    "no_commit_flush_intervals",
                    "on_refresh_failing",
                    "on_key_drift",
                    "on_edit_pending",
                    "edit_pending_hours",
                ]
            },
        ),
        ("Where it goes", {"fields": ["channel", "target", "quiet_minutes"]}),
        (None, {"fields": ["created", "updated"]}),
    ]


@admin.register(AlertState)
class AlertStateAdmin(ReadOnlyAdmin):
    list_display = ["rule", "subject", "firing", "notified", "since", "last_sent_at"]
    list_filter = ["firing", "rule"]
    search_fields = ["subject"]


@admin.register(AlertDelivery)
class AlertDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["created", "rule_name", "kind", "subject", "status", "attempts", "sent_at"]
    list_filter = ["status", "kind", "rule_name"]
    search_fields = ["subject", "rule_name", "last_error"]
    actions = ["retry_now"]

    @admin.action(description="Try the selected failed deliveries again now", permissions=["retry"])
    def retry_now(self, request: HttpRequest, queryset: QuerySet[AlertDelivery]) -> None:
        # Conditional: a delivery sent meanwhile is not queued again.
        count = queryset.filter(status=AlertDelivery.Status.FAILED).update(
            status=AlertDelivery.Status.PENDING, attempts=0, next_attempt_at=timezone.now()
        )
        self.message_user(request, f"{count} deliveries queued again.", messages.SUCCESS)

    def has_retry_permission(self, request: HttpRequest) -> bool:
        # The history stays read-only; queueing a failed delivery again is a change of it.
        return request.user.has_perm("offsets.change_alertdelivery")
