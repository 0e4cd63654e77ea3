"""How an offset change is written: the way chosen (through the Connect worker, KIP-875, or
straight to Kafka), and the direct write (a source's in one transaction, a sink's through its
group).

The worker is the supported way (it fences exactly-once zombies and asks the connector), so it
is used whenever it can be: the cluster has a worker URL, the worker answers, runs Apache
Kafka 3.6 or later, and the edit is a request the worker writes byte for byte as the topic
holds it (`offsets.domain.worker_offsets`). Otherwise the direct write remains, and the
reason is shown on the edit page before anyone applies.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from offsets import faults
from offsets.domain import edits as edit_rules
from offsets.domain import worker_offsets
from offsets.domain.masking import mask_text
from offsets.domain.worker_offsets import WorkerRequest
from offsets.edits.errors import SinkWriteIncomplete
from offsets.edits.live import as_bytes, sink_offset
from offsets.kafka import groups, offsets_writer
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectMalformed,
    ConnectNotJson,
    ConnectRest,
    ConnectRestError,
)
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import OffsetEdit

Via = OffsetEdit.AppliedVia
# The edit page asks the worker its version while rendering: a worker that does not answer
# must not hold the page for the adapter's full 30 s.
PROBE_SECONDS = 3.0
# The worker answers GET .../offsets from a fresh read of its offsets topic; a few tries
# cover a read that lags the write it just acknowledged.
VERIFY_TRIES = 10
VERIFY_PAUSE = 0.5


OWN_TOPIC_TOMBSTONES = (
    "The connector has its own offsets topic and the edit deletes offsets: the worker can hang "
    "writing such tombstones (seen on Connect 4.3 with exactly-once support), so the dashboard "
    "writes them to both topics itself."
)


class NothingSent(ConnectRestError):
    """The worker was not asked to write: reading its offsets first failed."""


@dataclass(frozen=True)
class Route:
    """The way chosen, why, and (through the worker) the request to send."""

    via: str
    reason: str
    request: WorkerRequest = field(default_factory=WorkerRequest)
    # Set when the worker answered in a way the apply must not work around (401, HTML).
    refusal: str = ""

    @property
    def through_worker(self) -> bool:
        return self.via == Via.WORKER


def worker_may_hang(edit: OffsetEdit, *, resets: bool = False) -> bool:
    """Whether asking the worker to delete the edit's offsets can hang (`resets`: all of them).

    Seen on Connect 4.x with exactly-once source support: a reset or a null offset for a
    connector with its own offsets topic writes that topic, then fails adding the worker topic
    to the transaction (IllegalStateException in setPrimaryThenSecondary) and the request
    never answers. Such deletes are written to both topics directly instead.
    """
    if not (edit.is_source and edit.mirror_topic):
        return False
    return resets or edit.changes.filter(is_delete=True).exists()


def edit_request(edit: OffsetEdit) -> WorkerRequest:
    """The edit's changes as a KIP-875 request, or why the worker cannot write them."""
    changes = edit.changes.all()
    if edit.is_source:
        return worker_offsets.source_request(
            edit.connector,
            ((bytes(change.key_bytes), change.after) for change in changes),
        )
    return worker_offsets.sink_request(
        (
            change.topic,
            change.kafka_partition,
            None if change.after is None else int(change.after["kafka_offset"]),
        )
        for change in changes
    )


STANDALONE_FILE = (
    "A standalone worker keeps its source offsets in its offsets file, not in a topic: the "
    "dashboard writes them through the running worker (Kafka 3.6 or later, with its REST URL "
    "registered), or to the file while the worker is stopped."
)


def choose_route(edit: OffsetEdit, *, timeout: float = PROBE_SECONDS) -> Route:
    """Decide how `edit` is written now, asking the worker for its version.

    A standalone worker's source offsets have no topic to write: only the worker writes them
    (its sinks' groups are written like any group).
    """
    chosen = _choose_route(edit, timeout=timeout)
    if edit.cluster.is_standalone and edit.is_source and not chosen.through_worker:
        reason = f"{chosen.reason} {STANDALONE_FILE}"
        return Route(chosen.via, reason, chosen.request, refusal=chosen.refusal or reason)
    return chosen


def _choose_route(edit: OffsetEdit, *, timeout: float) -> Route:
    topic = Via.TOPIC
    if not edit.cluster.connect_url:
        return Route(
            topic,
            "The cluster has no Connect worker URL, so the dashboard writes the offsets itself.",
        )
    if worker_may_hang(edit):
        return Route(topic, OWN_TOPIC_TOMBSTONES)
    request = edit_request(edit)
    if not request.possible:
        return Route(
            topic,
            f"The worker could not write these offsets as they are stored: {request.refusal}.",
        )
    try:
        info = ConnectRest.for_cluster(edit.cluster, timeout=timeout).worker_info()
    except (ConnectAuthFailed, ConnectNotJson) as exc:
        # Wrong credentials or a URL that is not a worker: a setup to fix, not to bypass.
        return Route(topic, exc.message, refusal=exc.message)
    except ConnectRestError as exc:
        return Route(
            topic,
            f"The worker did not answer ({exc.message}), so the dashboard "
            "writes the offsets itself.",
        )
    capabilities = info.capabilities
    if not capabilities.offsets_write:
        return Route(
            topic,
            f"The worker at {info.url} runs {info.version or 'an unknown version'}"
            ": writing offsets through it (KIP-875) needs Apache Kafka 3.6 or later.",
        )
    return Route(
        Via.WORKER,
        f"The worker at {info.url} (Kafka {info.version}) writes them itself with "
        "PATCH /connectors/{name}/offsets (KIP-875).",
        request,
    )


def write_through_worker(edit: OffsetEdit, route: Route) -> dict:
    """Send the edit to the worker; return what was asked and answered, for the audit log.

    Deleting every partition the worker has is one DELETE (Connect's reset), anything else a
    PATCH whose null offsets delete. Raises the adapter's errors.
    """
    rest = ConnectRest.for_cluster(edit.cluster)
    request = route.request
    if all(entry.offset is None for entry in request.entries):
        try:
            held = worker_offsets.answer_entries(rest.offsets(edit.connector))
        except (ConnectRestError, ValueError) as exc:
            raise NothingSent(f"Reading the worker's offsets first failed: {exc}") from exc
        if worker_offsets.resets_everything(request, held):
            answer = rest.reset_offsets(edit.connector)
            return _written("DELETE", rest, answer)
    answer = rest.alter_offsets(edit.connector, [e.as_json() for e in request.entries])
    return _written("PATCH", rest, answer)


def worker_shows(edit: OffsetEdit, route: Route) -> list[str]:
    """Read GET .../offsets until it shows the edit (or the tries run out): what differs."""
    rest = ConnectRest.for_cluster(edit.cluster)
    for attempt in range(VERIFY_TRIES):
        try:
            held = worker_offsets.answer_entries(rest.offsets(edit.connector))
        except ValueError as exc:
            raise ConnectMalformed(str(exc)) from exc
        wrong = worker_offsets.worker_mismatches(route.request, held)
        if not wrong or attempt == VERIFY_TRIES - 1:
            return wrong
        time.sleep(VERIFY_PAUSE)
    return wrong


def _written(method: str, rest: ConnectRest, answer) -> dict:
    message = answer.get("message", "") if isinstance(answer, dict) else ""
    # The worker's words go to the audit log: masked like any trace, and text only.
    message = mask_text(message) if isinstance(message, str) else ""
    return {
        "applied_via": Via.WORKER,
        "worker_request": f"{method} /connectors/{{name}}/offsets on {rest.url}",
        "worker_answer": message,
    }


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
