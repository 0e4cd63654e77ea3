"""The age of a JDBC-style source's position on the REAL worker: the project's table source
writes a JDBC source's offset shape ({"incrementing", "timestamp"}), and each commit's age is
the commit's time less that timestamp, in the partitions, the history, the API and the page.

(Debezium's PostgreSQL connector runs on a worker of its own in
test_debezium_position_age.py; its other shapes are covered from stored rows in
tests/refresh/test_source_position_age.py.)
"""

import uuid
from datetime import datetime

import pytest

from offsets.models import RefreshRun, SourceOffset
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import wait_until
from tests.support.worker_files import STRING_CONVERTERS

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
CONNECTOR = f"aged-{RUN}"
TABLE_SOURCE = "dev.offsetsdashboard.connectors.TableSourceConnector"
ROWS = 3


def ms(at: str | datetime) -> int:
    moment = datetime.fromisoformat(at.replace("Z", "+00:00")) if isinstance(at, str) else at
    return round(moment.timestamp() * 1000)


def test_a_jdbc_style_source_shows_its_position_age_at_each_commit(
    cluster, rest, spark, history_dir, logged_in_client
):
    rest.create(
        CONNECTOR,
        {
            "connector.class": TABLE_SOURCE,
            "tasks.max": "1",
            "topic": f"{CONNECTOR}-out",
            "tables": "customers,orders",
            "max.rows": str(ROWS),
            "poll.interval.ms": "300",
            **STRING_CONVERTERS,
        },
    )
    try:
        wait_until(
            lambda: rest.offsets(CONNECTOR)["offsets"],
            lambda offsets: sorted(e["offset"]["incrementing"] for e in offsets) == [ROWS, ROWS],
            timeout=60,
            what="the table source's last rows committed",
        )
        run = run_refresh(cluster=cluster, spark=spark)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    finally:
        rest.delete(CONNECTOR)

    base = f"/api/v1/clusters/{cluster.name}/connectors/{CONNECTOR}"
    partitions = logged_in_client.get(f"{base}/partitions/").json()["source_partitions"]
    assert len(partitions) == 2
    for partition in partitions:
        age = partition["position_age_ms"]
        assert age == ms(partition["last_commit_at"]) - partition["offset"]["timestamp"]
        assert 0 <= age < 60_000

    row = SourceOffset.objects.filter(cluster=cluster, connector=CONNECTOR).first()
    history = logged_in_client.get(f"{base}/history/?partition={row.key_hash}").json()
    commits = history["partition_history"]["commits"]
    assert commits and all(
        point["position_age_ms"] == ms(point["at"]) - point["offset"]["timestamp"]
        for point in commits
    )

    page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{CONNECTOR}/")
    html = page.content.decode()
    assert 'id="position-age-meta"' in html and "An idle source makes it grow" in html
    assert html.count('data-field="position-age"') == 2
    chart = logged_in_client.get(
        f"/clusters/{cluster.name}/connectors/{CONNECTOR}/?partition={row.key_hash}",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="progress",
    ).content.decode()
    assert (
        '>Source position age <span class="chart-bucket" data-field="bucket">at each commit<'
        in chart
    )
    assert 'id="position-age-note"' in chart
