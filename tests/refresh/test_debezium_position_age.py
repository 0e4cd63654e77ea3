"""The age of a CDC source's position on the REAL worker: Debezium's PostgreSQL connector
(3.6.1.Final, pgoutput) snapshots a table, then streams an insert and an update; each
streaming commit's age is the commit's time less the offset's `ts_usec`, in the API and on the
page. The snapshot's offsets (`snapshot`, `last_snapshot_record`) and the `{"server": prefix}`
partition show as written, the snapshot's without an age.
"""

import uuid
from datetime import datetime

import pytest

from offsets.models import RefreshRun, SourceOffset
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import wait_until
from tests.support.logical_postgres import LogicalPostgres, logical_postgres  # noqa: F401

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
CONNECTOR = f"debezium-{RUN}"
PREFIX = f"dbz{RUN}"
TABLE = f"customers_{RUN}"


def ms(at: str | datetime) -> int:
    moment = datetime.fromisoformat(at.replace("Z", "+00:00")) if isinstance(at, str) else at
    return round(moment.timestamp() * 1000)


def debezium_config(postgres: LogicalPostgres) -> dict:
    return {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1",
        "plugin.name": "pgoutput",
        "database.hostname": postgres.host,
        "database.port": str(postgres.port),
        "database.user": "postgres",
        "database.password": "trust-auth-ignores-it",
        "database.dbname": "postgres",
        "topic.prefix": PREFIX,
        "table.include.list": f"public.{TABLE}",
        "slot.name": f"slot_{RUN}",
        "publication.name": f"pub_{RUN}",
        "publication.autocreate.mode": "filtered",
        "snapshot.mode": "initial",
    }


def streaming(offset: dict) -> bool:
    return "snapshot" not in offset and {"lsn", "txId", "ts_usec"} <= offset.keys()


def committed_offset(rest) -> dict | None:
    offsets = rest.offsets(CONNECTOR)["offsets"]
    return offsets[0]["offset"] if offsets else None


def test_debeziums_postgres_connector_shows_its_position_age_at_each_commit(
    cluster,
    rest,
    spark,
    history_dir,
    logged_in_client,
    logical_postgres,  # noqa: F811
):
    logical_postgres.execute(
        f"CREATE TABLE {TABLE} (id int PRIMARY KEY, name text)",
        f"INSERT INTO {TABLE} VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')",
    )
    rest.create(CONNECTOR, debezium_config(logical_postgres))
    try:
        wait_until(
            lambda: committed_offset(rest),
            lambda offset: offset is not None and offset.get("last_snapshot_record") is True,
            timeout=60,
            what="the snapshot's last record committed",
        )
        seen = []
        for change in (
            f"INSERT INTO {TABLE} VALUES (4, 'barbara')",
            f"UPDATE {TABLE} SET name = 'edsger w.' WHERE id = 3",
        ):
            logical_postgres.execute(change)
            seen.append(
                wait_until(
                    lambda: committed_offset(rest),
                    lambda o: o and streaming(o) and o["lsn"] not in [s["lsn"] for s in seen],
                    timeout=30,
                    what=f"a streaming offset after {change!r}",
                )
            )
        run = run_refresh(cluster=cluster, spark=spark)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    finally:
        rest.delete(CONNECTOR)

    base = f"/api/v1/clusters/{cluster.name}/connectors/{CONNECTOR}"
    [partition] = logged_in_client.get(f"{base}/partitions/").json()["source_partitions"]
    assert partition["partition"] == {"server": PREFIX}
    assert partition["offset"] == seen[-1]
    assert partition["position_age_ms"] == (
        ms(partition["last_commit_at"]) - partition["offset"]["ts_usec"] // 1000
    )

    row = SourceOffset.objects.get(cluster=cluster, connector=CONNECTOR)
    history = logged_in_client.get(f"{base}/history/?partition={row.key_hash}").json()
    commits = history["partition_history"]["commits"]
    streamed = [point for point in commits if streaming(point["offset"])]
    assert {point["offset"]["lsn"] for point in streamed} >= {o["lsn"] for o in seen}
    for point in streamed:
        assert point["position_age_ms"] == ms(point["at"]) - point["offset"]["ts_usec"] // 1000
        assert point["position_age_ms"] >= 0
    # The snapshot's offsets carry the time the connector read the rows, not a change's time
    # in the database: they show, without an age.
    snapshot = [point for point in commits if "snapshot" in point["offset"]]
    assert snapshot and snapshot[-1]["offset"]["last_snapshot_record"] is True
    assert {point["offset"]["snapshot"] for point in snapshot} == {"INITIAL"}
    assert all(point["position_age_ms"] is None for point in snapshot)

    page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{CONNECTOR}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="position-age-meta"' in html and "An idle source makes it grow" in html
    assert html.count('data-field="position-age"') == 1
    assert PREFIX in html
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
