"""Evaluate the alert rules against the stored results and queue the messages they decide.

    evaluate(now=now)                     # every cluster (send_alerts)
    evaluate_after_refresh(cluster=c)     # after a refresh; never raises

Nothing is sent here: each message becomes a PENDING AlertDelivery, sent by
offsets/alerts/delivery.py, so that a slow or dead receiver never holds the caller.
A subject's state changes by a conditional update whose row count is checked, and its message
is queued in the same transaction: two evaluations at once (a refresh and send_alerts) queue
one message, not two.
"""

import dataclasses
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from offsets.alerts.messages import Message
from offsets.domain import alerts as rules
from offsets.domain.alerts import Condition, Decision, Fact, SubjectState
from offsets.domain.masking import mask_text
from offsets.models import (
    AlertDelivery,
    AlertRule,
    AlertState,
    Cluster,
    ConnectorSnapshot,
    KeyDrift,
    OffsetEdit,
    RefreshRun,
    SinkPartitionLag,
)

logger = logging.getLogger(__name__)


@dataclass
class ClusterView:
    """What the rules read of one cluster, loaded once per evaluation."""

    cluster: Cluster
    connectors: list[ConnectorSnapshot]
    partition_statuses: dict[str, dict[str, int]]  # connector -> status -> partitions
    drifted: dict[str, int]  # connector -> logical partitions with key drift
    pending_edits: list[OffsetEdit]
    failed_run: RefreshRun | None  # the last finished run, when it failed


@dataclass
class Evaluated:
    """How an evaluation went: messages queued, and the rules that could not be evaluated."""

    queued: int = 0
    errors: list[str] = field(default_factory=list)


def evaluate_after_refresh(*, cluster: Cluster) -> Evaluated | None:
    """Evaluate the cluster's rules after one of its refreshes; log any error, never raise.

    An alert must never fail or hold up the refresh it follows.
    """
    try:
        return evaluate(cluster=cluster)
    except Exception:
        logger.exception("Evaluating the alert rules of %s failed", cluster.name)
        return None


def evaluate(*, cluster: Cluster | None = None, now: datetime | None = None) -> Evaluated:
    """Evaluate every enabled rule (of `cluster` only, if given) and queue their messages."""
    now = now or timezone.now()
    enabled = AlertRule.objects.filter(enabled=True).select_related("cluster")
    clusters = [cluster] if cluster else list(Cluster.objects.all())
    if cluster:
        enabled = enabled.filter(Q(cluster__isnull=True) | Q(cluster=cluster))
    views: dict[int, ClusterView] = {}
    result = Evaluated()
    for rule in enabled:
        for watched in clusters:
            if rule.cluster_id not in (None, watched.pk):
                continue
            try:
                if watched.pk not in views:
                    views[watched.pk] = load_view(watched)
                result.queued += evaluate_rule(rule, views[watched.pk], now=now)
            except Exception as exc:
                # One rule that cannot be evaluated must not keep the others quiet.
                logger.exception("Alert rule %r on %s failed", rule.name, watched.name)
                result.errors.append(f"{rule.name} on {watched.name}: {mask_text(str(exc))}")
    return result


def load_view(cluster: Cluster) -> ClusterView:
    statuses: dict[str, dict[str, int]] = defaultdict(dict)
    for row in (
        SinkPartitionLag.objects.filter(cluster=cluster)
        .values("connector", "status")
        .annotate(count=Count("id"))
    ):
        statuses[row["connector"]][row["status"]] = row["count"]
    drifted = dict(
        KeyDrift.objects.filter(cluster=cluster)
        .values("connector")
        .annotate(count=Count("id"))
        .values_list("connector", "count")
    )
    last_run = (
        RefreshRun.objects.filter(cluster=cluster)
        .exclude(status=RefreshRun.Status.RUNNING)
        .order_by("-started_at")
        .first()
    )
    return ClusterView(
        cluster=cluster,
        connectors=list(ConnectorSnapshot.objects.filter(cluster=cluster, deleted=False)),
        partition_statuses=dict(statuses),
        drifted=drifted,
        pending_edits=list(
            OffsetEdit.objects.filter(cluster=cluster, state=OffsetEdit.State.SUBMITTED)
        ),
        failed_run=last_run if last_run and last_run.status == RefreshRun.Status.FAILED else None,
    )


def evaluate_rule(rule: AlertRule, view: ClusterView, *, now: datetime) -> int:
    """Decide every subject of one rule on one cluster; return the messages queued."""
    facts = rule_facts(rule, view, now=now)
    stored = {
        state.subject: state
        for state in AlertState.objects.filter(rule=rule, cluster_name=view.cluster.name)
    }
    decisions = rules.decide_all(
        facts,
        {subject: _subject_state(state) for subject, state in stored.items()},
        now=now,
        quiet=timedelta(minutes=rule.quiet_minutes),
    )
    return sum(
        _apply(rule, decision, stored.get(decision.subject), now=now) for decision in decisions
    )


def rule_facts(rule: AlertRule, view: ClusterView, *, now: datetime) -> list[Fact]:
    """The conditions of `rule` that hold now on the cluster."""
    conditions = rule.conditions()
    # Checked on save; a pattern stored some other way matches nothing rather than failing.
    try:
        compiled = rules.compile_pattern(rule.connector_pattern, rule.pattern_syntax)
    except rules.BadPattern as exc:
        logger.warning("Alert rule %r: %s", rule.name, exc)
        compiled = rules.regex.compile(r"(?!)")
    matches = rules.NameMatcher(compiled, rule=rule.name)
    name = view.cluster.name
    facts: list[Fact] = []
    if Condition.REFRESH_FAILING in conditions and view.failed_run is not None:
        error = mask_text(view.failed_run.error or "no error recorded")
        facts.append(Fact(name, "", Condition.REFRESH_FAILING, f"refresh failing: {error}", {}))
    for connector in view.connectors:
        if matches(connector.name):
            facts += _connector_facts(rule, conditions, view, connector)
    if Condition.EDIT_PENDING in conditions:
        for edit in view.pending_edits:
            waited = rules.edit_waiting(
                submitted_at=edit.submitted_at, now=now, hours=rule.edit_pending_hours
            )
            if waited is not None and matches(edit.connector):
                hours = waited.total_seconds() / 3600
                summary = f"offset edit #{edit.pk} waits for approval ({hours:.1f} h)"
                details = {"edit": edit.pk, "waiting_hours": round(hours, 1)}
                facts.append(
                    Fact(
                        name, edit.connector, Condition.EDIT_PENDING, summary, details, str(edit.pk)
                    )
                )
    return facts


def _connector_facts(
    rule: AlertRule, conditions: set[Condition], view: ClusterView, connector: ConnectorSnapshot
) -> list[Fact]:
    name, cluster = connector.name, view.cluster.name
    facts = []
    if Condition.LAG in conditions and (lag := _lag_fact(rule, view, connector)):
        facts.append(lag)
    if Condition.FAILED in conditions:
        failed = rules.failed_parts(connector.runtime_state, connector.task_states)
        if failed:
            facts.append(
                Fact(
                    cluster,
                    name,
                    Condition.FAILED,
                    f"FAILED: {', '.join(failed)}",
                    {"failed": failed},
                )
            )
    if (
        Condition.NO_COMMIT in conditions
        and connector.type == "source"
        and connector.runtime_state == "RUNNING"
    ):
        quiet = rules.no_commit_for(
            last_commit_at=connector.last_commit_at,
            seen_at=connector.updated_at,
            flush_interval_ms=view.cluster.offset_flush_interval_ms,
            intervals=rule.no_commit_flush_intervals,
        )
        if quiet is not None:
            minutes = quiet.total_seconds() / 60
            summary = f"no offset commit for {minutes:.0f} min"
            details = {
                "minutes_without_commit": round(minutes, 1),
                "stalled_partitions": connector.stalled_partitions,
            }
            facts.append(Fact(cluster, name, Condition.NO_COMMIT, summary, details))
    drifted = view.drifted.get(name, 0)
    if Condition.KEY_DRIFT in conditions and drifted:
        summary = f"key drift in {drifted} partition{'s' * (drifted != 1)}"
        facts.append(Fact(cluster, name, Condition.KEY_DRIFT, summary, {"partitions": drifted}))
    return facts


def _lag_fact(rule: AlertRule, view: ClusterView, connector: ConnectorSnapshot) -> Fact | None:
    """The connector's lag among the rule's statuses, if any.

    None for a connector its owner paused or stopped: its lag stops by design, the pages show
    it "paused" rather than ERR STOP, and nobody is paged for it (a failure in it still is).
    """
    if connector.paused_by_owner:
        return None
    statuses = view.partition_statuses.get(connector.name, {})
    problem = rules.lag_problem(connector.lag_status, statuses, rule.watched_lag_statuses())
    if not problem:
        return None
    details = {"lag_status": connector.lag_status, "partitions": statuses}
    if connector.upstream_cluster:
        # A mirror's lag is behind its upstream cluster, not behind its own topics.
        details["upstream_cluster"] = connector.upstream_cluster
    return Fact(view.cluster.name, connector.name, Condition.LAG, problem, details)


def _subject_state(state: AlertState) -> SubjectState:
    return SubjectState(state.firing, state.notified, state.since, state.last_sent_at)


def _apply(rule: AlertRule, decision: Decision, row: AlertState | None, *, now: datetime) -> int:
    """Store one decision and queue its message; 0 if another evaluation decided it first."""
    new = decision.state
    fields = {"firing": new.firing, "notified": new.notified, "since": new.since}
    fields["last_sent_at"] = new.last_sent_at
    if decision.fact is not None:
        fields["summary"] = decision.fact.summary
    with transaction.atomic():
        if row is None:
            fact = decision.fact
            assert fact is not None  # a subject never seen is decided only when it holds
            try:
                with transaction.atomic():
                    row = AlertState.objects.create(
                        rule=rule,
                        subject=decision.subject,
                        cluster_name=fact.cluster,
                        connector=fact.connector,
                        condition=fact.condition,
                        **fields,
                    )
            except IntegrityError:
                return 0
        elif not AlertState.objects.filter(
            pk=row.pk, firing=row.firing, notified=row.notified, last_sent_at=row.last_sent_at
        ).update(**fields):
            return 0  # nothing updated: another evaluation got there first
        else:
            row.summary = fields.get("summary", row.summary)
        if decision.send is None:
            return 0
        message = _message(rule, row, decision, now=now)
        AlertDelivery.objects.create(
            rule=rule,
            rule_name=rule.name,
            subject=decision.subject,
            kind=decision.send.value,
            body=dataclasses.asdict(message),
            next_attempt_at=now,
            created=now,
        )
    return 1


def _message(rule: AlertRule, row: AlertState, decision: Decision, *, now: datetime) -> Message:
    fact = decision.fact
    if fact is not None:
        summary, details = fact.summary, fact.details
    else:
        summary, details = f"recovered ({row.summary})", {}
    return Message(
        rule=rule.name,
        cluster=row.cluster_name,
        connector=row.connector,
        condition=row.condition,
        state=decision.send.value if decision.send else "",
        summary=summary,
        details=details,
        url=_dashboard_url(row),
        at=now.isoformat(),
    )


def _dashboard_url(row: AlertState) -> str:
    base = settings.ALERT_DASHBOARD_URL
    if not base:
        return ""
    if row.connector:
        path = reverse("connector", args=[row.cluster_name, row.connector])
    else:
        path = reverse("home")
    return base + path
