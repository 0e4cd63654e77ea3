"""The diff tables of the offset-edit pages: rows from an edit's saved changes or from a
preview's, one page of them at a time (an edit may touch tens of thousands of partitions)."""

from django.core.paginator import Paginator

from offsets.domain.edits import SinkChange, SourceChange
from offsets.edits.kinds.offset_changes.request import DIFF_PAGE_ROWS, Preview
from offsets.formats.offset_records import partition_identity
from offsets.models import OffsetEdit


def diff_context(edit: OffsetEdit, page: int) -> dict:
    """A summary of the edit's diff and one page of its rows (a restore may touch thousands)."""
    shown = Paginator(edit.changes.all(), DIFF_PAGE_ROWS).get_page(page)
    return {"counts": edit.change_counts(), "diff_page": shown, "rows": diff_rows(shown)}


def preview_context(preview: Preview) -> dict:
    """A dry run's summary and first rows for one connector, however large the document."""
    counts = preview.counts()
    return {
        "preview": preview,
        "counts": counts,
        "rows": diff_rows(preview.changes[:DIFF_PAGE_ROWS]),
        "not_shown": max(0, counts.total - DIFF_PAGE_ROWS),
    }


def diff_rows(changes) -> list[dict]:
    """Rows for edits/_diff.html from saved changes, or from a preview's changes."""
    return [_row(change) for change in changes]


def _row(change) -> dict:
    flags = {"is_new": change.is_new, "is_delete": change.is_delete, "warnings": change.warnings}
    if isinstance(change, SinkChange):
        return {
            "label": f"{change.topic}-{change.partition}",
            "before": "" if change.before is None else str(change.before),
            "after": "" if change.after is None else str(change.after),
            **flags,
        }
    if isinstance(change, SourceChange):
        key, before, after = change.key_bytes, change.before_bytes, change.after_bytes
    elif change.key_bytes is not None:
        key, before, after = (
            bytes(change.key_bytes),
            change.before_bytes and bytes(change.before_bytes),
            change.after_bytes and bytes(change.after_bytes),
        )
    else:
        # A saved sink change: its offsets are {"kafka_offset": N}.
        return {
            "label": f"{change.topic}-{change.kafka_partition}",
            "before": "" if change.before is None else str(change.before["kafka_offset"]),
            "after": "" if change.after is None else str(change.after["kafka_offset"]),
            **flags,
        }
    return {
        "label": partition_identity(change.partition),
        # A removal names the offsets topic of each tombstone.
        "topic": getattr(change, "topic", ""),
        "key": _text(key),
        "before": _text(before),
        "after": _text(after),
        **flags,
    }


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "backslashreplace")
