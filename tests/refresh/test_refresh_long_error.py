"""A refresh that fails with a long error is recorded: its phase is cut to the column's length,
its error kept whole.

db_engine: PostgreSQL refuses a value longer than a varchar's length, where SQLite stores it.
"""

import pytest

from offsets.kafka.errors import KafkaUnavailable
from offsets.models import RefreshRun
from offsets.refresh import plan
from offsets.refresh.run import run_refresh
from tests.support import factories

pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

# As long as librdkafka's last errors make "did not answer within" on a secured cluster.
LONG = "Kafka at 127.0.0.1:9 did not answer within 5 s; the last error: " + "SSL handshake " * 30


def test_a_refresh_failing_with_a_long_error_is_recorded_with_its_whole_error(monkeypatch):
    def unreachable(*args, **kwargs):
        raise KafkaUnavailable(LONG)

    monkeypatch.setattr(plan, "read_state_and_plan", unreachable)
    cluster = factories.cluster()

    run = run_refresh(cluster=cluster)

    stored = RefreshRun.objects.get(pk=run.pk)
    assert stored.status == RefreshRun.Status.FAILED and stored.finished_at is not None
    assert stored.error == LONG.strip()
    assert len(stored.phase) == RefreshRun._meta.get_field("phase").max_length
    assert stored.phase.startswith("failed: Kafka at 127.0.0.1:9") and stored.phase.endswith("…")
