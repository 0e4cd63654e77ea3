"""A real refresh of the seeded demo with an alert rule whose webhook hangs: the refresh
succeeds as fast as without it, and the messages wait in the queue for their sender."""

import time

import pytest

from offsets.alerts import delivery as alert_delivery
from offsets.models import AlertDelivery, AlertRule, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.alert_receivers import Receiver

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_a_refresh_with_a_hanging_webhook_succeeds_and_queues_its_alerts(
    demo_cluster, spark, seeded_demo, settings, tmp_path
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    settings.ALERT_WEBHOOK_TIMEOUT = 2
    hook = Receiver(hang_seconds=60)
    try:
        AlertRule.objects.create(
            name="everything", target=hook.url, on_key_drift=True, quiet_minutes=0
        )
        now_ms = seeded_demo.demo.options.end_ms + 60_000
        run = run_refresh(cluster=demo_cluster, spark=spark, now_ms=now_ms)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        queued = AlertDelivery.objects.filter(status="pending")
        assert "demo/http-source-metrics/key-drift" in {d.subject for d in queued}
        assert hook.bodies == []  # nothing was sent while the refresh ran
        started = time.monotonic()
        alert_delivery.send_due(budget_seconds=1)
        assert time.monotonic() - started < 6  # the budget stops the batch, each try times out
        tried = AlertDelivery.objects.exclude(attempts=0)
        assert tried and {d.last_error for d in tried} == {
            "The webhook at 127.0.0.1 did not answer within 2 s (ALERT_WEBHOOK_TIMEOUT)."
        }
        assert RefreshRun.objects.get(pk=run.pk).status == RefreshRun.Status.SUCCEEDED
    finally:
        hook.close()
