"""Offline edits of a stopped standalone worker's offsets file (strategy "offline-file").

A standalone worker reads its offsets file once, when it starts, and rewrites it whole at
every offset flush, so the file may be edited only while no worker runs: the lock check finds
no worker answering at the cluster's REST URL, the file's bytes as they were staged, and the
same bytes on two reads a moment apart. The diff is an offset change's (set, add, delete or
an imported document, `offset_changes.diff.preview_edit`) against the file as the worker would
load it. The write replaces the file in one rename, exactly as FileOffsetBackingStore writes
it, keeping the previous bytes as `NAME.bak-<edit id>-<time>` (named in the audit entry);
a deleted partition is a null value, as the worker's own reset writes it.
"""

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from offsets import tuning
from offsets.domain.edits import CheckResult
from offsets.edits import drafts
from offsets.edits.audit import fail, finish
from offsets.edits.errors import EditInputError, EditStateConflict
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.offset_changes.diff import draft, preview_edit, staged_request
from offsets.edits.kinds.offset_changes.request import StageRequest
from offsets.edits.live import LiveReader, settle_live
from offsets.formats.standalone_offsets_file import encode
from offsets.kafka import standalone_worker
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError, ConnectUnreachable
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, Cluster, OffsetEdit

State = OffsetEdit.State
Action = AuditEvent.Action
# The diffs an offline edit makes: a source offset change, or a document's (a restore needs
# the history of writes, which the file does not keep).
STAGED_AS = ("set", "add", "delete", OffsetEdit.Strategy.IMPORT)
# The checks' names, as the edit page lists them.
WORKER_STOPPED = "worker-not-answering"
FILE_AS_STAGED = "file-as-staged"
FILE_STILL = "file-not-changing"


@dataclass(frozen=True)
class OfflineChange:
    """Change a stopped standalone worker's offsets file as `request` says (set, add, delete
    or import)."""

    request: StageRequest


class OfflineFileKind(EditKind):
    name = "offline-file"
    strategies = (OffsetEdit.Strategy.OFFLINE_FILE,)
    inputs = (OfflineChange,)
    what = "offline write"

    def stage(
        self, *, cluster: Cluster, connector: str, user, change: OfflineChange, comment: str = ""
    ) -> OffsetEdit:
        """Diff the request against the file now, and keep the file's hash for the lock check."""
        drafts.require_editor(user, cluster, connector)
        request = change.request
        if not cluster.is_standalone:
            raise EditInputError(
                f"{cluster.name} is not a standalone worker: it has no offsets file.",
                field="strategy",
            )
        if request.strategy not in STAGED_AS:
            raise EditInputError(
                f"An offline edit sets, adds or deletes partitions ({', '.join(STAGED_AS)}), "
                f"not {request.strategy!r}.",
                field="strategy",
            )
        reader = LiveReader(cluster)
        preview = preview_edit(cluster=cluster, connector=connector, request=request, reader=reader)
        saved = offline(draft(preview, cluster), staged_as=request.strategy, reader=reader)
        return drafts.save(saved, user=user, comment=comment)

    def restage_change(self, edit: OffsetEdit) -> OfflineChange:
        """The request it was staged as (an import's entries from its rows' targets)."""
        return OfflineChange(staged_request(edit, edit.parameters.get("as", "")))

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """No worker answers; the file is the one staged, and it is not being written."""
        cluster = edit.cluster
        current, still = standalone_worker.file_is_still(
            cluster.offsets_file, pause=tuning.OFFSETS_FILE_STILL_SECONDS
        )
        staged = edit.parameters.get("file")
        return [
            worker_stopped_check(cluster),
            CheckResult(
                FILE_AS_STAGED,
                current.sha256 == staged,
                "The file holds the bytes it held when the edit was staged."
                if current.sha256 == staged
                else "The file changed since the edit was staged: re-stage it with the same inputs.",
            ),
            CheckResult(
                FILE_STILL,
                still,
                f"Two reads {tuning.OFFSETS_FILE_STILL_SECONDS:g} s apart found the same bytes."
                if still
                else "The file changed between two reads: a worker is writing it.",
            ),
        ]

    def write(self, attempt: Attempt) -> dict | None:
        """Write the rows' new values into the file's entries and replace the file."""
        edit = attempt.edit
        cluster = edit.cluster
        try:
            current = standalone_worker.read_offsets_file(cluster.offsets_file)
            entries = dict(current.entries)
            for change in edit.changes.all():
                after = change.after_bytes
                entries[bytes(change.key_bytes)] = None if after is None else bytes(after)
            stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
            backup = standalone_worker.replace_offsets_file(
                cluster.offsets_file,
                encode(entries),
                expected_sha256=edit.parameters.get("file", ""),
                backup_name=f"{_file_name(cluster)}.bak-{edit.pk}-{stamp}",
            )
        except KafkaUnavailable as exc:
            fail(edit, attempt.user, attempt.checks, f"{exc} Nothing was written.", {})
            return None
        with transaction.atomic():
            OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
                applied_via=OffsetEdit.AppliedVia.FILE
            )
        edit.applied_via = OffsetEdit.AppliedVia.FILE
        return {
            "applied_via": OffsetEdit.AppliedVia.FILE,
            "offsets_file": cluster.offsets_file,
            "backup": backup,
        }

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """Read the file back: applied when every row holds its new value."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks
        settled = settle_live(edit)
        if settled.outcome == "applied":
            extra = {**written, "verified": True, "verification": settled.message}
            return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
        error = f"The file was replaced but reading it back disagrees: {settled.message}"
        return fail(edit, user, checks, error, {**written, "verified": False})

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Read the file: all new -> applied, all old -> failed (never written), else conflict."""
        settled = settle_live(edit)
        details = {"reconciled": settled.message}
        if settled.outcome == "applied":
            state, why = State.APPLIED, ""
        elif settled.outcome == "not-applied":
            state, why = State.FAILED, f"{error or 'The file was not replaced.'} {settled.message}"
        else:
            state, why = State.CONFLICT, settled.message
        return finish(
            edit, state, Action.RECONCILED, user, comment=comment, error=why, extra=details
        )

    def describe(self, edit: OffsetEdit) -> dict:
        return {"offsets_file": edit.cluster.offsets_file}


def offline(saved: drafts.Draft, *, staged_as: str, reader: LiveReader) -> drafts.Draft:
    """`saved`, an offset change's draft diffed with `reader`, as an offline edit dated by
    the hash of the file the diff read.

    The file is read once more: one that changed meanwhile is being written by a worker.
    """
    path = saved.cluster.offsets_file
    read = reader.offsets_file
    if read is None or standalone_worker.read_offsets_file(path).sha256 != read.sha256:
        raise EditStateConflict(
            f"The offsets file {path} changed while the edit was staged (is the worker "
            "running?): stage it again once it is stopped."
        )
    saved.strategy = OffsetEdit.Strategy.OFFLINE_FILE
    saved.parameters = {**saved.parameters, "as": staged_as, "file": read.sha256}
    saved.audit_extra = {**saved.audit_extra, "offsets_file": path, "file_sha256": read.sha256}
    return saved


def suits(cluster: Cluster, request: StageRequest) -> bool:
    """Whether an offset change is staged as an offline edit: a set, add, delete or import of
    a standalone worker that does not answer (it is asked now)."""
    return (
        cluster.is_standalone
        and request.strategy in STAGED_AS
        and worker_stopped_check(cluster).passed
    )


def worker_stopped_check(cluster: Cluster) -> CheckResult:
    """`worker-not-answering`: no worker answers at the cluster's REST URL (if it has one)."""
    if not cluster.connect_urls:
        return CheckResult(
            WORKER_STOPPED,
            True,
            "No REST URL is registered; the file's checks stand for the worker being stopped.",
        )
    rest = ConnectRest.for_cluster(cluster, timeout=tuning.OFFSETS_FILE_PROBE_SECONDS)
    try:
        rest.worker_info()
    except ConnectUnreachable:
        return CheckResult(WORKER_STOPPED, True, "No worker answers at the REST URL.")
    except ConnectRestError as exc:
        # Refused credentials, an error page: something runs there, maybe the worker.
        return CheckResult(WORKER_STOPPED, False, f"Something answers at the REST URL: {exc}")
    return CheckResult(
        WORKER_STOPPED,
        False,
        f"The worker at {rest.url} answers: stop it, or edit through it while it runs.",
    )


def _file_name(cluster: Cluster) -> str:
    return cluster.offsets_file.rstrip("/").rsplit("/", 1)[-1]


KIND = OfflineFileKind()
