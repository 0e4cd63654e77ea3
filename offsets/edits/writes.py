"""What the source edits whose apply began wrote, and when: for naming the edit behind a
rewind (offsets.domain.edit_rewinds)."""

from collections import defaultdict
from datetime import datetime

from offsets.domain.edit_rewinds import CLOCK_SLACK, EditWrite, sink_key
from offsets.domain.history import offset_progress
from offsets.models import Cluster, OffsetEdit, OffsetEditChange
from offsets.models.refresh import key_hash

# An edit being applied may already have written; an applied one did; one that failed after
# its apply began may have (a read-back that disagreed), and only its own values in its own
# window match. One never claimed for an apply wrote nothing.
WRITING_STATES = (OffsetEdit.State.APPLYING, OffsetEdit.State.APPLIED, OffsetEdit.State.FAILED)


def edit_writes(
    cluster: Cluster,
    connectors: list[str] | None = None,
    since: datetime | None = None,
    *,
    sinks: bool = False,
) -> dict[str, list[EditWrite]]:
    """By connector, the writes of its source edits (with `sinks`, its sink edits) whose apply
    began, of these `connectors` (None: all of the cluster's); with `since`, those whose
    window reaches it. A source's partitions are its keys' hashes, a sink's its
    topic-partitions (`sink_key`)."""
    kind = OffsetEdit.ConnectorType.SINK if sinks else OffsetEdit.ConnectorType.SOURCE
    edits = OffsetEdit.objects.filter(
        cluster=cluster,
        connector_type=kind,
        state__in=WRITING_STATES,
        apply_started_at__isnull=False,
    )
    if connectors is not None:
        edits = edits.filter(connector__in=connectors)
    if since is not None:
        edits = edits.exclude(finished_at__lt=since - CLOCK_SLACK)
    windows = {
        pk: (connector, started, finished)
        for pk, connector, started, finished in edits.values_list(
            "pk", "connector", "apply_started_at", "finished_at"
        )
    }
    progress: dict[int, dict[str, float]] = defaultdict(dict)
    for pk, key, topic, partition, after in OffsetEditChange.objects.filter(
        edit_id__in=list(windows), is_delete=False
    ).values_list("edit_id", "key_bytes", "topic", "kafka_partition", "after"):
        value = offset_progress(after)
        if value is None:
            continue
        if sinks and partition is not None:
            progress[pk][sink_key(topic, partition)] = value
        elif not sinks and key is not None:
            progress[pk][key_hash(bytes(key))] = value
    writes: dict[str, list[EditWrite]] = defaultdict(list)
    for pk, (connector, started, finished) in windows.items():
        writes[connector].append(EditWrite(pk, started, finished, progress[pk]))
    return writes
