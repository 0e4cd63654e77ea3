"""Which way an edit's offsets are written: through the Connect worker (KIP-875) or the topic.

The worker is the supported way (it fences exactly-once zombies and asks the connector), so it
is used whenever it can be: the cluster has a worker URL, the worker answers, runs Apache
Kafka 3.6 or later, and the edit is a request the worker writes byte for byte as the topic
holds it (`offsets.domain.worker_offsets`). Otherwise the direct write remains, and the
reason is shown on the edit page before anyone applies.
"""

import time
from dataclasses import dataclass, field

from offsets.domain import worker_offsets
from offsets.domain.masking import mask_text
from offsets.domain.worker_offsets import WorkerRequest
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectMalformed,
    ConnectNotJson,
    ConnectRest,
    ConnectRestError,
)
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
