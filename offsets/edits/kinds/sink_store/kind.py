"""Offsets set in a sink's own store: a consumer group on another registered cluster (KIP-656's
MirrorSinkTask), or the project's plugin's offsets file (SinkOffsetsStore says which).

The same contract as every kind: staged with its diff against the store read now, then
submitted, approved, lock-checked, written, read back and audited, each entry naming the
store. The lock check is the store's own: the connector stopped on its Connect cluster,
a group on another cluster without members there, and nothing moved since staging. A file
is replaced whole and atomically (`plugin_file.write`), the connector stopped.
"""

from dataclasses import dataclass

from django.conf import settings

from offsets import sink_stores
from offsets.domain import edits as edit_rules
from offsets.domain.edits import CheckResult, Observed
from offsets.edits import drafts
from offsets.edits.audit import fail, finish
from offsets.edits.errors import EditInputError, NothingToChange
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.offset_changes.request import STORE_STRATEGIES, StageRequest
from offsets.edits.kinds.offset_changes.sink_diff import preview_sink
from offsets.edits.live import LiveReader, read_connector, sink_offset, sink_values
from offsets.kafka import groups
from offsets.kafka.errors import KafkaError
from offsets.models import AuditEvent, Cluster, OffsetEdit, SinkOffsetsStore
from offsets.sink_stores import (
    PLUGIN_FILE,
    REMOTE_GROUP,
    StoreOffsets,
    StoreSetting,
    StoreUnreadable,
    plugin_file,
)

State = OffsetEdit.State
Action = AuditEvent.Action
STRATEGY = OffsetEdit.Strategy.STORE_OFFSET
# How many "already there" notes a refusal quotes: a sink may read thousands of partitions.
NOTES_QUOTED = 10


@dataclass(frozen=True)
class StoreChange:
    """Set a sink's offsets in its own store with a sink strategy (`request`: one of
    STORE_STRATEGIES and its values)."""

    request: StageRequest


class SinkStoreKind(EditKind):
    name = "sink-store"
    strategies = (STRATEGY,)
    inputs = (StoreChange,)

    def stage(
        self, *, cluster: Cluster, connector: str, user, change: StoreChange, comment: str = ""
    ) -> OffsetEdit:
        """Stage the sink strategy the request names against the offsets its store holds now
        and each partition's log (clamped and warned like a Connect-group sink)."""
        drafts.require_editor(user, cluster, connector)
        request = change.request
        _check_strategy(request.strategy)
        store = _setting(cluster, connector)
        reader = LiveReader(cluster)
        context = read_connector(cluster=cluster, connector=connector, reader=reader)
        if context.type != "sink":
            raise EditInputError(f"{connector} is not a sink.", field="connector")
        before = _read_for_staging(store)
        preview = preview_sink(context=context, request=request, reader=reader, committed=before)
        if not preview.change_count:
            notes = "; ".join(preview.unchanged[:NOTES_QUOTED])
            raise NothingToChange(
                f"Every partition already holds that offset in the store: {notes}.",
                field="partitions" if request.strategy in ("earliest", "latest") else "value",
            )
        rows = drafts.sink_change_rows(preview.sink_changes)
        parameters = {
            **request.parameters(),
            "as": request.strategy,
            "store": _store_parameters(store),
        }
        draft = drafts.Draft(
            cluster=cluster,
            connector=connector,
            connector_type=OffsetEdit.ConnectorType.SINK,
            strategy=STRATEGY,
            parameters=parameters,
            warnings=preview.warnings,
            rows=rows,
            group_id=store.group_id,
            audit_extra={"store": store.where()},
        )
        return drafts.save(draft, user=user, comment=comment)

    def restage_change(self, edit: OffsetEdit) -> StoreChange:
        return StoreChange(store_request(edit.parameters))

    def unreadable(self, attempt: Attempt, exc: Exception) -> str | None:
        if isinstance(exc, StoreUnreadable):
            return f"The lock check could not read the sink's store: {exc}"
        return super().unreadable(attempt, exc)

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """Connector stopped on its Connect cluster, the store's group without members on
        its own cluster, nothing moved in the store since staging."""
        store = stored_setting(edit)
        context = read_connector(cluster=edit.cluster, connector=edit.connector)
        checks = [edit_rules.check_stopped(context)]
        if store.kind == REMOTE_GROUP:
            group = groups.describe_group(
                store.kafka, store.group_id, timeout=settings.KAFKA_READ_TIMEOUT
            )
            checks.append(
                edit_rules.check_group_inactive(
                    group_id=f"{store.group_id} on {store.cluster}",
                    state=group.state,
                    member_count=group.member_count,
                )
            )
        values = sink_values(edit.changes.all(), sink_stores.read(store))
        observed = [Observed(label, before, current) for label, before, _, current in values]
        checks.append(edit_rules.check_nothing_moved(observed))
        return checks

    def write(self, attempt: Attempt) -> dict | None:
        """Commit the group's new offsets on its cluster, or replace the file atomically."""
        edit = attempt.edit
        store = stored_setting(edit)
        after = {
            (change.topic, change.kafka_partition): sink_offset(change.after)
            for change in edit.changes.all()
        }
        if store.kind == REMOTE_GROUP:
            groups.alter_offsets(
                store.kafka, store.group_id, after, timeout=settings.KAFKA_WRITE_TIMEOUT
            )
        else:
            plugin_file.write(store, {**sink_stores.read(store), **after})
        return {"store": store.where(), "written": len(after)}

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """Read the store back: applied if every touched partition holds its new value."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks
        settled = _settle(edit)
        extra = {**written, "verified": settled.outcome == "applied"}
        if settled.outcome == "applied":
            extra["verification"] = settled.message
            return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
        error = f"The write was acknowledged but reading it back disagrees: {settled.message}"
        return fail(edit, user, checks, error, extra)

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Read the store back: all new -> applied, all old -> failed, else conflict."""
        settled = _settle(edit)
        details = {"reconciled": settled.message, "store": stored_setting(edit).where()}
        if settled.outcome == "applied":
            state, why = State.APPLIED, ""
        elif settled.outcome == "not-applied":
            state = State.FAILED
            why = f"{error or 'The apply was interrupted before its write.'} {settled.message}"
        else:
            state, why = State.CONFLICT, settled.message
        return finish(
            edit, state, Action.RECONCILED, user, comment=comment, error=why, extra=details
        )

    def describe(self, edit: OffsetEdit) -> dict:
        return {
            "offsets_store": _where(edit.parameters.get("store", {})),
            "store_strategy": store_strategy_words(edit.parameters),
        }


KIND = SinkStoreKind()


@dataclass(frozen=True)
class EditableStore:
    """A sink's store as its edit page offers it: in words, and why it cannot be read now."""

    words: str
    error: str = ""
    # What the store holds now, read for the check above; None when it could not be read.
    offsets: StoreOffsets | None = None


def editable_store(cluster: Cluster, connector: str) -> EditableStore | None:
    """The store a sink's edits write, read now so an unreadable one offers no form; None
    for a sink whose offsets are in Connect's group."""
    row = sink_stores.store_of(cluster, connector)
    if row is None or row.kind == SinkOffsetsStore.Kind.CONNECT_GROUP:
        return None
    store = sink_stores.setting_of(row)
    if store.kind == REMOTE_GROUP:
        words = f"the group {store.group_id} on cluster {store.cluster}"
    else:
        words = f"the plugin's file {store.path}"
    try:
        offsets = sink_stores.read(store)
    except (StoreUnreadable, KafkaError) as exc:
        return EditableStore(words, str(exc))
    return EditableStore(words, offsets=offsets)


# The sink strategy a store-offset edit was staged as, in words (its parameters filled in).
STRATEGY_WORDS = {
    "earliest": "to earliest",
    "latest": "to latest",
    "offset": "to offset {value}",
    "shift": "shifted by {value}",
    "datetime": "to the date-time {at}",
    "duration": "back by {duration_seconds:g} s",
}


def store_strategy_words(parameters: dict) -> str:
    """How the edit set the store, e.g. "shifted by -5" (an edit without `as` set an offset)."""
    strategy = parameters.get("as", "offset")
    return STRATEGY_WORDS[strategy].format(**parameters)


def store_request(parameters: dict) -> StageRequest:
    """The request a store-offset edit was staged with. One staged before it kept its sink
    strategy (`as`) set every partition to `value`, its partitions as [topic, partition]."""
    if "as" in parameters:
        return StageRequest.from_parameters(parameters["as"], parameters)
    partitions = parameters.get("partitions")
    return StageRequest(
        strategy="offset",
        value=parameters["value"],
        partitions=tuple((t, int(p)) for t, p in partitions) if partitions else None,
    )


def stored_setting(edit: OffsetEdit) -> StoreSetting:
    """The store the edit was staged against, its group's cluster looked up now."""
    store = edit.parameters["store"]
    if store["kind"] == REMOTE_GROUP:
        hosting = Cluster.objects.get(name=store["cluster"])
        return StoreSetting(
            REMOTE_GROUP,
            group_id=store["group_id"],
            cluster=hosting.name,
            kafka=hosting.kafka_settings(),
        )
    return StoreSetting(PLUGIN_FILE, path=store["path"])


def _setting(cluster: Cluster, connector: str) -> StoreSetting:
    """The sink's store outside Connect's group, or why an edit of it cannot be staged."""
    row = sink_stores.store_of(cluster, connector)
    if row is None or row.kind == SinkOffsetsStore.Kind.CONNECT_GROUP:
        raise EditInputError(
            f"{connector} keeps its offsets in Connect's group: edit them with the sink "
            "strategies.",
            field="connector",
        )
    return sink_stores.setting_of(row)


def _check_strategy(strategy: str) -> None:
    if strategy not in STORE_STRATEGIES:
        raise EditInputError(
            f"{strategy!r} is not a strategy for a sink's store; use one of "
            f"{', '.join(STORE_STRATEGIES)}.",
            field="as",
        )


def _read_for_staging(store: StoreSetting) -> StoreOffsets:
    """The store's offsets now; one that cannot be read is refused as bad input (400)."""
    try:
        return sink_stores.read(store)
    except StoreUnreadable as exc:
        raise EditInputError(
            f"The sink's store cannot be read, so no edit of it can be staged: {exc}",
            field="connector",
        ) from exc


def _store_parameters(store: StoreSetting) -> dict:
    return {
        "kind": store.kind,
        "group_id": store.group_id,
        "cluster": store.cluster,
        "path": store.path,
    }


def _where(parameters: dict) -> str:
    if not parameters:
        return ""
    return StoreSetting(
        parameters["kind"],
        group_id=parameters["group_id"],
        cluster=parameters["cluster"],
        path=parameters["path"],
    ).where()


def _settle(edit: OffsetEdit) -> edit_rules.Settled:
    current: StoreOffsets = sink_stores.read(stored_setting(edit))
    return edit_rules.settle(sink_values(edit.changes.all(), current))
