"""Alerts: the rules (managed in the admin), each subject's last decision, and what was sent.

The rules themselves are pure (offsets/domain/alerts.py); offsets/alerts/evaluation.py
evaluates them and queues AlertDelivery rows, and offsets/alerts/delivery.py sends
those, retrying with backoff.
"""

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import models

from offsets.domain.alerts import LAG_STATUSES, BadPattern, Condition, compile_pattern
from offsets.models.cluster import Cluster, connect_url_validator


class AlertRule(models.Model):
    """Which conditions of which connectors to tell whom about, and how."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "Webhook (generic JSON)"
        SLACK = "slack", "Webhook (Slack-compatible)"
        EMAIL = "email", "E-mail"

    class PatternSyntax(models.TextChoices):
        GLOB = "glob", "Glob (orders-*)"
        REGEX = "regex", "Regular expression (whole name)"

    name = models.CharField(max_length=100, unique=True)
    enabled = models.BooleanField(default=True)
    cluster = models.ForeignKey(
        Cluster,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="alert_rules",
        help_text="Empty: every cluster.",
    )
    connector_pattern = models.CharField(
        max_length=500,
        blank=True,
        help_text="Connector names the rule watches; empty: every connector. Cluster-wide "
        "conditions (a failing refresh) ignore it.",
    )
    pattern_syntax = models.CharField(
        max_length=5, choices=PatternSyntax.choices, default=PatternSyntax.GLOB
    )
    on_lag = models.BooleanField(
        "lag status not OK", default=True, help_text="Fires on the statuses listed below."
    )
    lag_statuses = models.CharField(
        max_length=100,
        default=",".join(LAG_STATUSES),
        blank=True,
        help_text="Comma-separated: WARN, ERR (a sink's status), STALL, STOP, REWIND (a partition's).",
    )
    on_failed = models.BooleanField("connector or task FAILED", default=True)
    on_no_commit = models.BooleanField("source without commits", default=True)
    no_commit_flush_intervals = models.PositiveIntegerField(
        default=5, help_text="A running source without a commit for this many flush intervals."
    )
    on_refresh_failing = models.BooleanField("refresh failing", default=True)
    on_key_drift = models.BooleanField("key drift found", default=False)
    on_edit_pending = models.BooleanField("edit waiting for approval", default=False)
    edit_pending_hours = models.FloatField(
        default=4, help_text="A submitted offset edit not approved for this many hours."
    )
    channel = models.CharField(max_length=8, choices=Channel.choices, default=Channel.WEBHOOK)
    target = models.TextField(
        help_text="The webhook's http(s) URL, or comma-separated e-mail addresses."
    )
    quiet_minutes = models.PositiveIntegerField(
        default=30,
        help_text="After a message about a subject, no other one about it for this long "
        "(its recovery aside).",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, str] = {}
        try:
            compile_pattern(self.connector_pattern, self.pattern_syntax)
        except BadPattern as exc:
            errors["connector_pattern"] = str(exc)
        unknown = sorted(set(self.watched_lag_statuses()) - set(LAG_STATUSES))
        if unknown:
            errors["lag_statuses"] = (
                f"Unknown status {', '.join(unknown)}: use {', '.join(LAG_STATUSES)}."
            )
        target_error = self.target_error()
        if target_error:
            errors["target"] = target_error
        if not self.conditions():
            errors["on_lag"] = "Choose at least one condition."
        if errors:
            raise ValidationError(errors)

    def target_error(self) -> str | None:
        if self.channel == self.Channel.EMAIL:
            addresses = self.email_addresses()
            if not addresses:
                return "Enter at least one e-mail address."
            for address in addresses:
                try:
                    validate_email(address)
                except ValidationError:
                    return f"{address!r} is not an e-mail address."
            return None
        try:
            connect_url_validator(self.target.strip())
        except ValidationError:
            return "Enter the webhook's http:// or https:// URL."
        return None

    def email_addresses(self) -> list[str]:
        return [item.strip() for item in self.target.split(",") if item.strip()]

    def watched_lag_statuses(self) -> set[str]:
        return {item.strip().upper() for item in self.lag_statuses.split(",") if item.strip()}

    def conditions(self) -> set[Condition]:
        chosen = {
            Condition.LAG: self.on_lag,
            Condition.FAILED: self.on_failed,
            Condition.NO_COMMIT: self.on_no_commit,
            Condition.REFRESH_FAILING: self.on_refresh_failing,
            Condition.KEY_DRIFT: self.on_key_drift,
            Condition.EDIT_PENDING: self.on_edit_pending,
        }
        return {condition for condition, on in chosen.items() if on}


class AlertState(models.Model):
    """A rule's last decision about one subject (de-duplication across evaluations)."""

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="states")
    subject = models.CharField(max_length=400)  # alerts/rules.subject_key
    # What the subject's recovery message names (a subject key cannot be split back: a
    # connector name may hold "/").
    cluster_name = models.CharField(max_length=63)
    connector = models.CharField(max_length=249, blank=True)
    condition = models.CharField(max_length=20)
    summary = models.TextField(blank=True)  # the last firing's
    firing = models.BooleanField(default=False)
    notified = models.BooleanField(default=False)  # the current firing was announced
    since = models.DateTimeField(null=True, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["rule", "subject"]
        constraints = [
            models.UniqueConstraint(fields=["rule", "subject"], name="one_state_per_subject")
        ]

    def __str__(self) -> str:
        return f"{self.rule}: {self.subject} ({'firing' if self.firing else 'ok'})"


class AlertDelivery(models.Model):
    """One message of a rule about a subject, and how its delivery went (the history)."""

    class Kind(models.TextChoices):
        FIRING = "firing"
        RESOLVED = "resolved"

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    # The history outlives its rule: a deleted rule leaves its deliveries, named.
    rule = models.ForeignKey(
        AlertRule, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )
    rule_name = models.CharField(max_length=100)
    subject = models.CharField(max_length=400)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # The message's fields (alerts/messages.Message); each channel renders it at send time.
    body = models.JSONField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)  # masked (alerts/messages.describe_failure)
    created = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        verbose_name_plural = "alert deliveries"
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="offsets_alert_due")]

    def __str__(self) -> str:
        return f"{self.rule_name}: {self.kind} {self.subject} ({self.status})"
