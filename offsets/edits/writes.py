"""Write an edit's changes: a source's in one transaction, a sink's through its group."""

from collections.abc import Callable

from django.conf import settings
from django.utils import timezone

from offsets import faults
from offsets.edits.errors import SinkWriteIncomplete
from offsets.edits.outcome import as_bytes, sink_offset
from offsets.formats import edit_rules
from offsets.kafka import groups, offsets_writer
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import OffsetEdit


def write_source(edit: OffsetEdit, before_commit: Callable[[], None]) -> dict:
    """Write every key in one transaction; return what was written, for the audit log."""
    result = offsets_writer.write_transaction(
        edit.cluster.kafka_settings(),
        _source_writes(edit),
        transactional_id=offsets_writer.transactional_id(edit.cluster.name, edit.connector),
        timeout=settings.KAFKA_WRITE_TIMEOUT,
        before_commit=before_commit,
    )
    return {
        "transactional_id": result.transactional_id,
        "records": [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset} for r in result.records
        ],
    }


def _source_writes(edit: OffsetEdit) -> list[offsets_writer.OffsetWrite]:
    writes = []
    for change in edit.changes.all():
        key, value = bytes(change.key_bytes), as_bytes(change.after_bytes)
        writes.append(offsets_writer.OffsetWrite(edit.primary_topic, key, value))
        if edit.mirror_topic:
            # The runtime copies offsets to the worker topic too, and since KAFKA-15018 also
            # the tombstones: its reads overlay the own topic on the worker topic, so a key
            # deleted only in the own topic would show the worker topic's old value again.
            writes.append(offsets_writer.OffsetWrite(edit.mirror_topic, key, value))
    return writes


def write_sink(edit: OffsetEdit) -> dict:
    """Commit the group's new offsets; deleting some takes two steps (raises SinkWriteIncomplete).

    The client cannot delete single partitions' offsets, so a delete removes the whole group
    and commits every other partition again.
    """
    kafka, timeout = edit.cluster.kafka_settings(), settings.KAFKA_WRITE_TIMEOUT
    changes = list(edit.changes.all())
    sets = {(c.topic, c.kafka_partition): sink_offset(c.after) for c in changes if not c.is_delete}
    deletes = {(c.topic, c.kafka_partition) for c in changes if c.is_delete}
    if not deletes:
        groups.alter_offsets(kafka, edit.group_id, sets, timeout=timeout)
        return {"committed": len(sets)}
    committed = groups.committed_offsets(kafka, edit.group_id, timeout=timeout)
    keep = {tp: offset for tp, offset in committed.items() if tp not in deletes}
    keep.update(sets)
    # What the group must hold after the two steps goes to the database first, and is
    # committed there (apply_edit runs outside any transaction: ATOMIC_REQUESTS is off), so a
    # process killed between the delete and the re-commit leaves the list behind for
    # reconciliation, which then compares the whole group with it instead of calling the
    # edit applied because its own deleted partitions are gone.
    edit.sink_keep = edit_rules.keep_as_json(keep)
    OffsetEdit.objects.filter(pk=edit.pk, state=OffsetEdit.State.APPLYING).update(
        sink_keep=edit.sink_keep, updated=timezone.now()
    )
    groups.delete_group(kafka, edit.group_id, timeout=timeout)
    faults.pause_point("apply-between-sink-steps")
    if keep:
        try:
            groups.alter_offsets(kafka, edit.group_id, keep, timeout=timeout)
        except KafkaUnavailable as exc:
            raise SinkWriteIncomplete(str(exc), keep) from exc
    return {"deleted": len(deletes), "committed": len(keep)}
