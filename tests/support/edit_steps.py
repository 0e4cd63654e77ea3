"""An offset edit taken through its steps: staged, submitted, approved, applied."""

from offsets.edits import workflow
from offsets.edits.apply import apply_edit
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.workflow import OffsetChange, StageRequest
from offsets.models import Cluster, OffsetEdit
from tests.support.demo_data import AUDIT, AUDIT_PARTITION, EOS, S3


def stage(cluster: Cluster, connector: str, editor, **request) -> OffsetEdit:
    """Stage an edit of `connector` as `editor`; `request` holds the StageRequest's fields."""
    return workflow.stage(
        cluster=cluster,
        connector=connector,
        user=editor,
        change=OffsetChange(StageRequest(**request)),
    )


def approve(edit: OffsetEdit, editor, approver) -> OffsetEdit:
    """Submit `edit` as the editor who staged it and approve it as `approver`."""
    submit_edit(edit=edit, user=editor)
    return approve_edit(edit=edit, user=approver)


def approve_and_apply(edit: OffsetEdit, editor, approver) -> OffsetEdit:
    """Submit and approve `edit`, then apply it as `approver`."""
    return apply_edit(edit=approve(edit, editor, approver), user=approver)


def stage_and_approve(cluster: Cluster, connector: str, editor, approver, **request) -> OffsetEdit:
    """Stage an edit of `connector` as `editor`, submit it and approve it as `approver`."""
    return approve(stage(cluster, connector, editor, **request), editor, approver)


def stage_approve_apply(
    cluster: Cluster, connector: str, editor, approver, **request
) -> OffsetEdit:
    """Stage, submit and approve an edit of `connector`, then apply it as `approver`."""
    return approve_and_apply(stage(cluster, connector, editor, **request), editor, approver)


def approved_audit_edit(cluster: Cluster, editor, approver, offset: dict) -> OffsetEdit:
    """Stage and approve setting the demo's audit-log source to `offset`."""
    return stage_and_approve(
        cluster, AUDIT, editor, approver, strategy="set", partition=AUDIT_PARTITION, offset=offset
    )


def approved_eos_edit(cluster: Cluster, editor, approver) -> OffsetEdit:
    """Stage and approve setting the demo's exactly-once source to LSN 1."""
    return stage_and_approve(
        cluster,
        EOS,
        editor,
        approver,
        strategy="set",
        partition={"server": "orders-db"},
        offset={"lsn": 1},
    )


def approved_sink_edit(cluster: Cluster, editor, approver, **request) -> OffsetEdit:
    """Stage and approve an edit of the demo's S3 sink (by default: every partition to earliest)."""
    return stage_and_approve(cluster, S3, editor, approver, **(request or {"strategy": "earliest"}))
