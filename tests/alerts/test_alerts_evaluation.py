"""Alert rules evaluated against stored results: one message per transition, the quiet period,
patterns, each condition, and rules the admin refuses."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from offsets.alerts import evaluation as alerts
from offsets.domain import alerts as alert_rules
from offsets.models import AlertDelivery, AlertRule, AlertState, ConnectorSnapshot, RefreshRun
from tests.support import factories
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db


def make_rule(**fields) -> AlertRule:
    defaults = {
        "name": "ops",
        "channel": AlertRule.Channel.WEBHOOK,
        "target": "http://127.0.0.1:9/hook",
        "quiet_minutes": 0,
    }
    rule = AlertRule(**{**defaults, **fields})
    rule.full_clean()
    rule.save()
    return rule


def sent() -> list[tuple[str, str, str]]:
    """(kind, connector, condition) of every queued message, oldest first."""
    return [
        (d.kind, d.body["connector"], d.body["condition"])
        for d in AlertDelivery.objects.order_by("pk")
    ]


def evaluate(minutes: float = 0) -> alerts.Evaluated:
    return alerts.evaluate(now=timezone.now() + timedelta(minutes=minutes))


def set_tasks(snapshot: ConnectorSnapshot, **tasks: str) -> None:
    ConnectorSnapshot.objects.filter(pk=snapshot.pk).update(task_states=tasks)


def test_a_rule_fires_once_per_transition_and_once_on_recovery():
    cluster = factories.cluster()
    orders = factories.snapshot(cluster, "orders")
    make_rule(on_lag=False)
    evaluate(0)
    assert sent() == []
    set_tasks(orders, **{"0": "FAILED"})
    for minute in (1, 2, 3):
        evaluate(minute)
    assert sent() == [("firing", "orders", "failed")]
    delivery = AlertDelivery.objects.get()
    assert delivery.body["summary"] == "FAILED: task 0" and delivery.status == "pending"
    set_tasks(orders, **{"0": "RUNNING"})
    for minute in (4, 5):
        evaluate(minute)
    assert sent() == [("firing", "orders", "failed"), ("resolved", "orders", "failed")]
    resolved = AlertDelivery.objects.order_by("pk").last()
    assert resolved.body["state"] == "resolved" and "FAILED: task 0" in resolved.body["summary"]
    set_tasks(orders, **{"0": "FAILED"})
    evaluate(6)
    assert [kind for kind, *_ in sent()] == ["firing", "resolved", "firing"]


def test_the_quiet_period_holds_back_a_flap_but_never_a_recovery():
    cluster = factories.cluster()
    orders = factories.snapshot(cluster, "orders")
    make_rule(on_lag=False, quiet_minutes=30)
    set_tasks(orders, **{"0": "FAILED"})
    evaluate(0)
    set_tasks(orders, **{"0": "RUNNING"})
    evaluate(1)  # the recovery goes out within the quiet period
    set_tasks(orders, **{"0": "FAILED"})
    evaluate(2)  # held back: 1 minute after the last message
    evaluate(20)
    assert [kind for kind, *_ in sent()] == ["firing", "resolved"]
    evaluate(32)  # the quiet period is over and it still holds
    assert [kind for kind, *_ in sent()] == ["firing", "resolved", "firing"]


def test_two_evaluations_of_one_transition_queue_one_message():
    cluster = factories.cluster()
    factories.snapshot(cluster, "orders", task_states={"0": "FAILED"})
    rule = make_rule(on_lag=False)
    view, now = alerts.load_view(cluster), timezone.now()
    # A second evaluation decided from what it read before the first one stored anything.
    decision = alert_rules.decide_all(
        alerts.rule_facts(rule, view, now=now), {}, now=now, quiet=timedelta(0)
    )[0]
    assert alerts.evaluate_rule(rule, view, now=now) == 1
    assert alerts._apply(rule, decision, None, now=now) == 0  # its new state exists already
    stale = AlertState.objects.get()
    stale.firing = stale.notified = False
    stale.last_sent_at = None
    assert alerts._apply(rule, decision, stale, now=now) == 0  # the state changed since
    assert AlertDelivery.objects.count() == 1


def test_a_cluster_rule_and_a_connector_pattern_pick_their_subjects():
    prod, test = factories.cluster("prod"), factories.cluster("test")
    for cluster in (prod, test):
        for name in ("orders-cdc", "billing"):
            factories.snapshot(cluster, name, task_states={"0": "FAILED"})
    make_rule(cluster=prod, connector_pattern="orders-*", on_lag=False)
    make_rule(
        name="regex", connector_pattern="(billing|nothing)", pattern_syntax="regex", on_lag=False
    )
    evaluate()
    subjects = sorted(d.subject for d in AlertDelivery.objects.all())
    assert subjects == ["prod/billing/failed", "prod/orders-cdc/failed", "test/billing/failed"]


def test_a_bad_pattern_is_refused_with_a_clear_message_and_the_rule_is_kept():
    rule = make_rule(connector_pattern="orders-*")
    rule.connector_pattern = "orders-("
    rule.pattern_syntax = "regex"
    with pytest.raises(ValidationError) as raised:
        rule.full_clean()
    assert raised.value.message_dict["connector_pattern"] == [
        "The pattern 'orders-(' is not a valid regex: missing ) at position 8"
    ]
    assert AlertRule.objects.get().connector_pattern == "orders-*"


def test_a_bad_pattern_stored_anyway_matches_nothing_and_breaks_no_other_rule():
    cluster = factories.cluster()
    factories.snapshot(cluster, "orders", task_states={"0": "FAILED"})
    make_rule(on_lag=False)
    AlertRule.objects.create(
        name="broken", connector_pattern="(", pattern_syntax="regex", target="http://x:1/"
    )
    result = evaluate()
    assert result.errors == [] and [d.rule_name for d in AlertDelivery.objects.all()] == ["ops"]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"target": "ftp://example.com/"},
            "target",
            "Enter the webhook's http:// or https:// URL.",
        ),
        ({"channel": "email", "target": "ops@, x"}, "target", "'ops@' is not an e-mail address."),
        (
            {"lag_statuses": "WARN,LATE"},
            "lag_statuses",
            "Unknown status LATE: use WARN, ERR, STALL, STOP, REWIND.",
        ),
        (
            {
                "on_lag": False,
                "on_failed": False,
                "on_no_commit": False,
                "on_refresh_failing": False,
            },
            "on_lag",
            "Choose at least one condition.",
        ),
    ],
)
def test_the_admin_refuses_a_bad_rule_saying_why(fields, field, message):
    with pytest.raises(ValidationError) as raised:
        make_rule(**fields)
    assert raised.value.message_dict[field] == [message]
    assert not AlertRule.objects.exists()


def test_lag_statuses_of_sinks_and_their_partitions():
    cluster = factories.cluster()
    factories.snapshot(cluster, "s3-sink", type="sink", lag_status="WARN")
    factories.snapshot(cluster, "jdbc-sink", type="sink", lag_status="OK")
    factories.sink_lags(cluster, "jdbc-sink", "orders", 2, status="STALL")
    make_rule(lag_statuses="ERR,STALL", on_failed=False, on_no_commit=False)
    evaluate()
    assert [(d.body["connector"], d.body["summary"]) for d in AlertDelivery.objects.all()] == [
        ("jdbc-sink", "2 partitions STALL")
    ]


def test_a_connector_paused_by_its_owner_raises_no_lag_alert_but_a_failure_still_fires():
    cluster = factories.cluster()
    for name, target in (("held-sink", "PAUSED"), ("parked-sink", "STOPPED")):
        factories.snapshot(
            cluster, name, type="sink", runtime_state=target, target_state=target, lag_status="ERR"
        )
        factories.sink_lags(cluster, name, "orders", 1, status="STOP")
    # Paused by nobody: its tasks died with lag waiting. An alarm.
    factories.snapshot(
        cluster, "dead-sink", type="sink", runtime_state="UNASSIGNED", lag_status="ERR"
    )
    factories.sink_lags(cluster, "dead-sink", "orders", 1, status="STOP")
    # Paused by its owner, but a task failed: the failure wins, as on the pages.
    factories.snapshot(
        cluster,
        "broken-sink",
        type="sink",
        runtime_state="PAUSED",
        target_state="PAUSED",
        task_states={"0": "FAILED"},
        lag_status="ERR",
    )
    make_rule(on_no_commit=False)
    evaluate()
    assert sorted(
        (d.body["connector"], d.body["condition"]) for d in AlertDelivery.objects.all()
    ) == [
        ("broken-sink", "failed"),
        ("broken-sink", "lag"),
        ("dead-sink", "lag"),
    ]


def test_a_running_mirrors_lag_alert_names_its_upstream_cluster():
    cluster = factories.cluster()
    factories.snapshot(
        cluster, "mirror", lag_status="ERR", upstream_cluster="east-kafka", source_alias="east"
    )
    factories.sink_lags(cluster, "mirror", "orders", 1, status="STALL", upstream="east-kafka")
    make_rule(on_failed=False, on_no_commit=False)
    evaluate()
    (delivery,) = AlertDelivery.objects.all()
    assert delivery.body["summary"] == "lag status ERR, 1 partition STALL"
    assert delivery.body["details"]["upstream_cluster"] == "east-kafka"


def test_a_source_without_commits_for_n_flush_intervals():
    cluster = factories.cluster(offset_flush_interval_ms=60_000)
    seen = timezone.now()
    factories.snapshot(
        cluster, "fresh", last_commit_at=seen - timedelta(minutes=2), updated_at=seen
    )
    factories.snapshot(
        cluster, "quiet", last_commit_at=seen - timedelta(minutes=11), updated_at=seen
    )
    factories.snapshot(
        cluster, "paused", runtime_state="PAUSED", last_commit_at=seen - timedelta(hours=1)
    )
    make_rule(no_commit_flush_intervals=10, on_lag=False, on_failed=False)
    evaluate()
    assert sent() == [("firing", "quiet", "no-commit")]


def test_a_failing_refresh_fires_and_a_good_one_resolves():
    cluster = factories.cluster()
    make_rule(connector_pattern="nothing-matches", on_lag=False)
    factories.run(
        cluster, RefreshRun.Status.FAILED, ago=120, error="broker down: sasl.password=s3cret"
    )
    evaluate(0)
    factories.run(cluster, RefreshRun.Status.RUNNING, ago=30)  # a running one changes nothing
    evaluate(1)
    assert sent() == [("firing", "", "refresh-failing")]
    assert "s3cret" not in AlertDelivery.objects.get().body["summary"]
    factories.run(cluster, ago=10)
    evaluate(2)
    assert sent() == [("firing", "", "refresh-failing"), ("resolved", "", "refresh-failing")]


def test_key_drift_found():
    cluster = factories.cluster()
    factories.snapshot(cluster, "cdc")
    factories.drift(cluster, "cdc", '{"table":"a"}', [])
    make_rule(on_key_drift=True, on_lag=False, on_failed=False, on_no_commit=False)
    evaluate()
    assert [(d.subject, d.body["summary"]) for d in AlertDelivery.objects.all()] == [
        ("prod/cdc/key-drift", "key drift in 1 partition")
    ]


def test_an_edit_waiting_for_approval_too_long_fires_per_edit_and_resolves_when_approved(user):
    cluster = factories.cluster()
    old = make_edit(cluster, user, state="submitted", connector="cdc")
    recent = make_edit(cluster, user, state="submitted", connector="cdc")
    now = timezone.now()
    type(old).objects.filter(pk=old.pk).update(submitted_at=now - timedelta(hours=5))
    type(old).objects.filter(pk=recent.pk).update(submitted_at=now - timedelta(hours=1))
    make_rule(on_edit_pending=True, edit_pending_hours=4, on_lag=False, on_refresh_failing=False)
    evaluate()
    assert [d.subject for d in AlertDelivery.objects.all()] == [f"prod/cdc/edit-pending#{old.pk}"]
    type(old).objects.filter(pk=old.pk).update(state="approved")
    evaluate(1)
    assert [d.kind for d in AlertDelivery.objects.order_by("pk")] == ["firing", "resolved"]


def test_a_deleted_connector_counts_as_recovered():
    cluster = factories.cluster()
    orders = factories.snapshot(cluster, "orders", task_states={"0": "FAILED"})
    make_rule(on_lag=False)
    evaluate(0)
    ConnectorSnapshot.objects.filter(pk=orders.pk).update(deleted=True)
    evaluate(1)
    assert [kind for kind, *_ in sent()] == ["firing", "resolved"]


def test_a_disabled_rule_is_not_evaluated():
    cluster = factories.cluster()
    factories.snapshot(cluster, "orders", task_states={"0": "FAILED"})
    make_rule(enabled=False)
    evaluate()
    assert sent() == []


def test_an_evaluation_error_after_a_refresh_is_logged_not_raised(monkeypatch, caplog):
    cluster = factories.cluster()

    def broken(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr(alerts, "evaluate", broken)
    assert alerts.evaluate_after_refresh(cluster=cluster) is None
    assert "Evaluating the alert rules of prod failed" in caplog.text
