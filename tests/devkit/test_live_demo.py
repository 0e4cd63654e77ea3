"""`live_demo` creates real connectors on the Connect worker, in the states it means them to
show, and its line writer makes their source offsets move as a refresh of the cluster sees."""

import io
import json
import time
import uuid

import pytest
from django.core.management import call_command

from devkit import embedded_config
from offsets.kafka.connect_rest import ConnectRest
from offsets.models import Cluster, ConnectorSnapshot, SinkPartitionLag, SourceOffset
from offsets.refresh.run import run_refresh

pytestmark = pytest.mark.integration


@pytest.fixture
def live_cluster(db, kafka_runtime, settings, tmp_path):
    if not kafka_runtime.connect_url:
        pytest.skip("needs a Connect worker (KAFKA_TEST_CONNECT_URL)")
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    return Cluster.objects.create(
        name="live",
        bootstrap_servers=kafka_runtime.bootstrap_servers,
        connect_url=kafka_runtime.connect_url,
        offset_flush_interval_ms=embedded_config.WORKER_FLUSH_INTERVAL_MS,
        **embedded_config.WORKER_TOPICS,
    )


def live_demo(tmp_path, namespace: str, **options) -> str:
    out = io.StringIO()
    call_command(
        "live_demo",
        cluster="live",
        namespace=namespace,
        data_dir=tmp_path / "live-demo",
        warm_up=3,
        lines_per_second=20,
        flap_seconds=4,
        stdout=out,
        **options,
    )
    return out.getvalue()


def file_position(cluster: Cluster, connector: str) -> int:
    row = SourceOffset.objects.get(cluster=cluster, connector=connector, effective=True)
    return row.offset["position"]


def test_it_creates_its_connectors_in_their_states_and_their_offsets_move(
    live_cluster, tmp_path, spark
):
    ns = f"t{uuid.uuid4().hex[:6]}-"
    output = live_demo(tmp_path, ns, duration=6)
    assert "12 live connectors as intended." in output

    statuses = ConnectRest(live_cluster.connect_url).connectors()
    ours = {name: status for name, status in statuses.items() if name.startswith(ns)}
    states = {name.removeprefix(ns): status.summary for name, status in ours.items()}
    assert states.pop("clicks-sink") in ("RUNNING", "PAUSED")  # paused and resumed in turns
    assert states == {
        "app-logs-source": "RUNNING",
        "audit-source": "RUNNING",
        "orders-eos-source": "RUNNING",
        "inventory-table-source": "RUNNING",
        "mm2-upstream-source": "RUNNING",
        "app-logs-sink": "RUNNING",
        "audit-sink": "RUNNING",
        "warehouse-sink": "RUNNING",
        "archive-source": "STOPPED",
        "mirror-sink": "PAUSED",
        "orders-sink": "FAILED",
        "payments-sink": "FAILED",
    }
    for name in ("app-logs-source", "mm2-upstream-source", "app-logs-sink"):
        assert ours[ns + name].tasks == ("RUNNING",)
    assert ours[ns + "orders-sink"].state == "RUNNING"  # the connector runs, its task failed
    assert ours[ns + "orders-sink"].tasks == ("FAILED",)
    assert "Couldn't find or create file" in ours[ns + "orders-sink"].traces[0]
    # The payments sink fails on its poison record, the 21st: every payment before it written.
    assert ours[ns + "payments-sink"].tasks == ("FAILED",)
    written = (tmp_path / "live-demo" / f"{ns}payments.out").read_text().splitlines()
    assert [json.loads(line)["payment"] for line in written] == list(range(1, 21))

    assert run_refresh(cluster=live_cluster, spark=spark).status == "succeeded"
    first = file_position(live_cluster, ns + "app-logs-source")
    assert first > 0
    snapshots = {
        s.name.removeprefix(ns): s
        for s in ConnectorSnapshot.objects.filter(cluster=live_cluster, name__startswith=ns)
    }
    assert snapshots["retired-source"].deleted  # deleted, its offsets remain
    assert SourceOffset.objects.filter(cluster=live_cluster, connector=ns + "retired-source")
    assert snapshots["archive-source"].runtime_state == "STOPPED"
    assert snapshots["mirror-sink"].runtime_state == "PAUSED"
    assert snapshots["orders-eos-source"].own_offsets_topic == f"live.{ns}orders-eos-offsets"
    assert snapshots["mm2-upstream-source"].mirrormaker2
    tables = SourceOffset.objects.filter(
        cluster=live_cluster, connector=ns + "inventory-table-source", effective=True
    )
    assert {row.partition["table"] for row in tables} == {"orders", "customers", "shipments"}

    # Run again: every connector is kept (the deleted one is not created again), and the
    # writer's new lines move the file source's position.
    again = live_demo(tmp_path, ns, duration=6)
    assert f"{ns}app-logs-source: exists" in again
    assert f"{ns}retired-source: deleted before" in again
    assert run_refresh(cluster=live_cluster, spark=spark).status == "succeeded"
    assert file_position(live_cluster, ns + "app-logs-source") > first
    paused_lag = SinkPartitionLag.objects.get(cluster=live_cluster, connector=ns + "mirror-sink")
    assert paused_lag.lag_records > 0  # the mirrored topic grows while its sink is paused
    poisoned = SinkPartitionLag.objects.get(cluster=live_cluster, connector=ns + "payments-sink")
    assert (poisoned.committed, poisoned.log_end) == (20, 31)  # stuck at the poison


def test_a_live_commit_shows_in_the_api_while_refreshes_run_back_to_back(
    live_cluster, tmp_path, spark, logged_in_client
):
    # What `refresh_offsets --every 1` does, in this process: rounds a second apart in one
    # Spark session. A liveness check, not a timing: the bound is generous.
    ns = f"t{uuid.uuid4().hex[:6]}-"
    live_demo(tmp_path, ns, setup_only=True)
    assert run_refresh(cluster=live_cluster, spark=spark).status == "succeeded"
    source = tmp_path / "live-demo" / f"{ns}app.log"
    with source.open("a") as lines:
        lines.write("".join(f"line {n} of a live commit\n" for n in range(50)))
    url = f"/api/v1/clusters/live/connectors/{ns}app-logs-source/offsets/"
    deadline = time.monotonic() + 60
    shown = None
    while time.monotonic() < deadline:
        assert run_refresh(cluster=live_cluster, spark=spark).status == "succeeded"
        offsets = logged_in_client.get(url).json()["offsets"]
        shown = offsets[0]["offset"]["position"] if offsets else None
        if shown == source.stat().st_size:
            break
        time.sleep(1)
    assert shown == source.stat().st_size
