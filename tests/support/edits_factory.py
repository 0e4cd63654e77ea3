"""Offset edits made straight in the database, for tests that need no broker."""

from datetime import timedelta

from django.utils import timezone

from offsets.edits.reconcile import stale_after
from offsets.models import Cluster, OffsetEdit, OffsetEditChange


def make_edit(cluster: Cluster, user, *, state: str = "draft", connector: str = "file-src"):
    """A source edit of one partition: {"filename": "a"} position 1 -> 2."""
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector=connector,
        connector_type="source",
        strategy="set",
        state=state,
        created_by=user,
        primary_topic="connect-offsets",
        warnings=["New partition: check the field order."],
    )
    OffsetEditChange.objects.create(
        edit=edit,
        position=0,
        partition={"filename": "a"},
        key_bytes=f'["{connector}",{{"filename":"a"}}]'.encode(),
        before={"position": 1},
        before_bytes=b'{"position":1}',
        after={"position": 2},
        after_bytes=b'{"position":2}',
    )
    return edit


def make_stuck(edit: OffsetEdit, *, stale: bool = True) -> OffsetEdit:
    """Leave ``edit`` "applying" as a dead process would: older than stale_after() or not."""
    age = stale_after() + timedelta(seconds=5) if stale else timedelta(seconds=5)
    OffsetEdit.objects.filter(pk=edit.pk).update(
        state=OffsetEdit.State.APPLYING, apply_started_at=timezone.now() - age
    )
    edit.refresh_from_db()
    return edit
