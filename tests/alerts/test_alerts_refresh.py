"""Alerts after a refresh: queued when the run is recorded, never sent inline, and a failing
receiver or a failing evaluation never delays or fails the refresh."""

import io

import pytest
from django.core.management import CommandError, call_command

from offsets.alerts import delivery as alert_delivery
from offsets.alerts import evaluation as alerts
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AlertDelivery, AlertRule, RefreshRun
from offsets.refresh import plan
from offsets.refresh.run import run_refresh
from tests.support import factories
from tests.support.alert_receivers import Receiver


@pytest.fixture
def hanging_hook(settings):
    settings.ALERT_WEBHOOK_TIMEOUT = 2
    hook = Receiver(hang_seconds=30)
    yield hook
    hook.close()


@pytest.fixture
def broker_down(monkeypatch):
    def unreachable(*args, **kwargs):
        raise KafkaUnavailable("The cluster could not be read: broker down")

    monkeypatch.setattr(plan, "read_state_and_plan", unreachable)


def make_rule(url: str) -> AlertRule:
    return AlertRule.objects.create(name="ops", channel="webhook", target=url, quiet_minutes=0)


@pytest.mark.django_db
def test_a_failed_refresh_queues_its_alert_and_sends_nothing_inline(hanging_hook, broker_down):
    cluster = factories.cluster()
    make_rule(hanging_hook.url)
    run = run_refresh(cluster=cluster)
    assert run.status == RefreshRun.Status.FAILED and run.finished_at
    delivery = AlertDelivery.objects.get()
    assert (delivery.kind, delivery.status, delivery.body["condition"]) == (
        "firing",
        "pending",
        "refresh-failing",
    )
    assert "broker down" in delivery.body["summary"]
    assert hanging_hook.bodies == []


@pytest.mark.django_db
def test_an_evaluation_that_fails_leaves_the_refresh_recorded(broker_down, monkeypatch, caplog):
    cluster = factories.cluster()

    def broken(**kwargs):
        raise RuntimeError("alerts table on fire")

    monkeypatch.setattr(alerts, "evaluate", broken)
    run = run_refresh(cluster=cluster)
    assert RefreshRun.objects.get(pk=run.pk).status == RefreshRun.Status.FAILED
    assert "Evaluating the alert rules of prod failed" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_the_refresh_command_returns_while_a_hanging_receiver_is_tried_on_a_thread(
    hanging_hook, broker_down, settings
):
    # The receiver holds the request until released, far longer than the command could take.
    settings.ALERT_WEBHOOK_TIMEOUT = 30
    factories.cluster()
    make_rule(hanging_hook.url)
    with pytest.raises(CommandError, match="Refresh failed: The cluster could not be read"):
        call_command("refresh_offsets", cluster="prod", stdout=io.StringIO())
    sender = alert_delivery._background
    assert sender is not None and sender.is_alive()
    assert AlertDelivery.objects.get().attempts == 0  # returned with the send still waiting
    hanging_hook.release.set()
    sender.join(timeout=30)
    delivery = AlertDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 1, "")
    assert len(hanging_hook.bodies) == 1
