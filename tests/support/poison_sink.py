"""A sink stuck on a poison record on the REAL worker: the project's MarkerFailingSink, which
fails for good on the record whose value is its marker. For the tests of "the record that broke
it" (the Django client's and the browser's)."""

import json
from dataclasses import dataclass
from pathlib import Path

from offsets.kafka import groups, producers
from offsets.models import Cluster, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import STRING_CONVERTERS, ConnectRest, wait_until
from tests.support.worker_files import produce

MARKER_SINK = "dev.offsetsdashboard.connectors.MarkerFailingSinkConnector"
POISON = "POISON"
BEFORE = 5  # records delivered before the poison
AFTER = 3  # records produced after it


@dataclass(frozen=True)
class PoisonedSink:
    connector: str
    topic: str
    output: Path
    poison_offset: int
    before: list[str]
    after: list[str]


def poisoned_sink(
    rest: ConnectRest, kafka: dict, cluster: Cluster, spark, name: str, output: Path
) -> PoisonedSink:
    """Create the sink, deliver BEFORE records (committed), then the poison (a JSON value with
    a secret field, so masking shows) and AFTER records; wait for its task FAILED; refresh."""
    topic = f"{name}-in"
    before = [f"before-{i}" for i in range(BEFORE)]
    produce(kafka, topic, before)
    poison = json.dumps({"marker": POISON, "password": "hunter2", "note": "<script>x</script>"})
    rest.create(
        name,
        {
            "connector.class": MARKER_SINK,
            "tasks.max": "1",
            "topics": topic,
            "file": str(output),
            "fail.on.value": poison,
            **STRING_CONVERTERS,
        },
    )
    group = f"connect-{name}"
    # Committed past every record before the poison: the failing batch then holds the poison
    # first, so the committed offset is the poison's.
    wait_until(
        lambda: groups.committed_offsets(kafka, group),
        lambda offsets: offsets.get((topic, 0)) == BEFORE,
        timeout=90,
        what=f"{group} committed {BEFORE}",
    )
    after = [f"after-{i}" for i in range(AFTER)]
    producer = producers.java_producer(kafka)
    producer.produce(
        topic,
        key=b"order-42",
        value=poison.encode(),
        headers=[("trace-id", b"t-1"), ("authorization", b"Bearer abc.def")],
        on_delivery=producers.raise_on_delivery_error,
    )
    for value in after:
        producer.produce(topic, value=value.encode(), on_delivery=producers.raise_on_delivery_error)
    assert producer.flush(10) == 0
    wait_until(
        lambda: rest.status(name),
        lambda status: bool(status and status["tasks"]) and status["tasks"][0]["state"] == "FAILED",
        timeout=90,
        what=f"{name}'s task FAILED",
    )
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    return PoisonedSink(name, topic, output, BEFORE, before, after)
