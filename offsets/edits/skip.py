"""Skip this record: a reviewed edit that moves one sink partition past the record it is stuck
on, staged like any other edit (approved, lock-checked, applied with the connector stopped).

The edit sets the partition to the record's offset + 1, an absolute offset rather than a shift
of the committed one: the record shown may sit after the committed offset (the offsets before it
deleted, or a transaction marker), and "past this record" is what was reviewed. Its comment,
which the audit entry keeps too, names the topic, partition and offset and links to the record.
"""

from collections.abc import Callable

from django.urls import reverse

from offsets.edits.drafts import require_editor
from offsets.edits.errors import EditInputError
from offsets.edits.kinds.offset_changes.diff import preview_edit
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.models import Cluster, OffsetEdit


def record_anchor(topic: str, partition: int) -> str:
    """The id of a partition's record on the connector page."""
    return f"record-{topic}-{partition}"


def record_link(
    absolute: Callable[[str], str], cluster: str, connector: str, topic: str, partition: int
) -> str:
    """The connector page with its next records shown, at the partition's record: where the
    skipped record was seen. `absolute` makes a path a full URL (the request's host)."""
    page = reverse("connector", args=[cluster, connector])
    return absolute(f"{page}?records=show#{record_anchor(topic, partition)}")


def skip_comment(topic: str, partition: int, offset: int, link: str, comment: str = "") -> str:
    said = f"Skip the record at {topic}-{partition} offset {offset} (seen at {link})."
    return f"{said} {comment.strip()}" if comment.strip() else said


def stage_skip(
    *,
    cluster: Cluster,
    connector: str,
    user,
    topic: str,
    partition: int,
    offset: int,
    absolute: Callable[[str], str],
    comment: str = "",
) -> OffsetEdit:
    """Stage moving `connector`'s partition `topic`-`partition` to `offset` + 1.

    Refused when the sink already reads past it (a page shown before someone skipped it, or
    the sink resumed): moving it back to `offset` + 1 would deliver records again."""
    link = record_link(absolute, cluster.name, connector, topic, partition)
    request = StageRequest(strategy="offset", value=offset + 1, partitions=((topic, partition),))
    require_editor(user, cluster, connector)
    (change,) = preview_edit(cluster=cluster, connector=connector, request=request).sink_changes
    if change.before is not None and change.before > offset + 1:
        raise EditInputError(
            f"The sink already reads {topic}-{partition} at offset {change.before}, past the "
            f"record at {offset}: skipping it would move the sink back. Nothing was staged.",
            field="offset",
        )
    return stage(
        cluster=cluster,
        connector=connector,
        user=user,
        change=OffsetChange(request),
        comment=skip_comment(topic, partition, offset, link, comment),
    )
