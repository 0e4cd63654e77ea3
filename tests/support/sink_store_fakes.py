"""A sink whose offsets live in the plugin's file, with its Kafka reads faked: the sink
`files` reads orders-0 and orders-1, whose logs hold offsets 2 to 10, and the broker answers
offset 6 for any time. Staging a store-offset edit then reads only the file for real."""

from dataclasses import dataclass
from types import SimpleNamespace

from django.core.paginator import Paginator

from offsets.domain.connectors import Connector
from offsets.edits.live import CurrentOffsets
from offsets.kafka.admin import Watermarks
from offsets.kafka.reading import RawRecord, RecordsAround
from offsets.models import SinkOffsetsStore

PARTITIONS = [("orders", 0), ("orders", 1)]
LOG_START, LOG_END, AT_TIME = 2, 10, 6


def context(target_state: str = "STOPPED") -> Connector:
    return Connector(
        name="files",
        type="sink",
        deleted=False,
        target_state=target_state,
        connector_state=target_state,
        task_states={},
        mirrormaker2=False,
        group_id="connect-files",
        sink_topics=("orders",),
    )


@dataclass
class StoreSink:
    """The sink's store row and its file: `holds` writes the offsets the file holds."""

    row: SinkOffsetsStore
    path: str

    def holds(self, text: str) -> None:
        with open(self.path, "w") as file:
            file.write(text)


def store_sink(monkeypatch, cluster, tmp_path) -> StoreSink:
    """Set the sink `files` on `cluster` to keep its offsets in a file, its reads faked."""
    path = tmp_path / "files.offsets"
    path.write_text("orders\\:0=5\norders\\:1=8\n")
    row = SinkOffsetsStore.objects.create(
        cluster=cluster, connector="files", kind="plugin_file", offsets_file=str(path)
    )
    reader = SimpleNamespace(kafka={}, partition_counts=lambda: {"orders": 2})
    monkeypatch.setattr("offsets.edits.kinds.sink_store.kind.LiveReader", lambda cluster: reader)
    monkeypatch.setattr(
        "offsets.edits.kinds.sink_store.kind.read_connector", lambda **_: context("STOPPED")
    )
    monkeypatch.setattr(
        "offsets.edits.kinds.offset_changes.sink_diff.sink_partitions", lambda **_: PARTITIONS
    )
    monkeypatch.setattr(
        "offsets.kafka.reading.confirmed_watermarks",
        lambda kafka, scope, timeout: {tp: Watermarks(LOG_START, LOG_END) for tp in scope},
    )
    asked: list[int] = []

    def offsets_for_times(kafka, times, timeout):
        asked.extend(times.values())
        return dict.fromkeys(times, AT_TIME)

    def records_around(kafka, topic, partition, position, log_start, timeout):
        # The record at the answer is just after the time asked, the one before just before.
        return RecordsAround(
            before=RawRecord(topic, partition, position - 1, asked[-1] - 1, None, None),
            at=RawRecord(topic, partition, position, asked[-1] + 1, None, None),
        )

    monkeypatch.setattr("offsets.kafka.admin.offsets_for_times", offsets_for_times)
    monkeypatch.setattr("offsets.kafka.reading.records_around", records_around)
    live = CurrentOffsets(
        context=context(), page=Paginator([], 100).page(1), total=0, partitions=set(PARTITIONS)
    )
    monkeypatch.setattr("dashboard.pages.edits.views.current_offsets", lambda **_: live)
    return StoreSink(row, str(path))
