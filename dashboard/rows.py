"""Table rows formatted in Python once, so templates print values instead of computing them.

A list page shows 50-100 rows of ~10 cells. Formatting them here (numbers, ages, badges,
URLs, JSON) keeps each cell one variable in the template; template tags and filters cost
several times more per cell, and a table of a hundred rows made them most of the page's time.
"""

from dataclasses import dataclass
from html import escape
from urllib.parse import quote

from django.utils import timezone
from django.utils.safestring import SafeString

from dashboard.formatting import (
    DASH,
    MUTED_DASH,
    ago_html,
    compact_json,
    duration_ms,
    num,
    status_html,
)
from offsets.models import ConnectorSnapshot, SinkPartitionLag, SourceOffset
from offsets.services.snapshots import status_reasons

TIMES = "\u00d7"


@dataclass(frozen=True, slots=True)
class ConnectorRow:
    name: str
    quoted_name: str  # for query strings
    url: str
    badges: SafeString
    type: str
    state: SafeString
    tasks: str
    partitions: str
    lag_records: str
    lag_ms: str
    status: SafeString
    last_commit: SafeString
    malformed: SafeString


def _badges(snapshot: ConnectorSnapshot) -> SafeString:
    html = ""
    if snapshot.deleted:
        html += ' <span class="badge muted">deleted (offsets remain)</span>'
    if snapshot.mirrormaker2:
        html += ' <span class="badge">MirrorMaker 2</span>'
    if snapshot.own_offsets_topic:
        html += (
            f' <span class="badge" title="{escape(snapshot.own_offsets_topic)}">'
            "own offsets topic (exactly-once)</span>"
        )
    if snapshot.offsets_managed_externally:
        html += ' <span class="badge warn-badge">offsets managed outside Connect</span>'
    if snapshot.drifted_partitions:
        html += (
            ' <span class="badge err-badge" title="the same partition under several key byte '
            f'forms">key drift {TIMES}{snapshot.drifted_partitions}</span>'
        )
    return SafeString(html)


def _state(snapshot: ConnectorSnapshot) -> SafeString:
    if snapshot.deleted:
        return SafeString('<span class="muted">deleted</span>')
    runtime = DASH
    if snapshot.runtime_state:
        state = escape(snapshot.runtime_state)
        title = f' title="{escape(snapshot.trace)}"' if snapshot.trace else ""
        runtime = f'<span class="state state-{state.lower()}"{title}>{state}</span>'
    return SafeString(
        f'<span class="small">{escape(snapshot.target_state or DASH)}</span> / {runtime}'
    )


def connector_rows(snapshots: list[ConnectorSnapshot], base_url: str) -> list[ConnectorRow]:
    """One row per connector of the list; `base_url` is the cluster's connectors URL."""
    now = timezone.now()
    rows = []
    for snapshot in snapshots:
        has_lag = snapshot.type == "sink" and not snapshot.offsets_managed_externally
        quoted = quote(snapshot.name, safe="")
        rows.append(
            ConnectorRow(
                name=snapshot.name,
                quoted_name=quoted,
                url=f"{base_url}{quoted}/",
                badges=_badges(snapshot),
                type=snapshot.type,
                state=_state(snapshot),
                tasks=num(snapshot.task_count),
                partitions=num(snapshot.partitions),
                lag_records=num(snapshot.lag_records) if has_lag else MUTED_DASH,
                lag_ms=duration_ms(snapshot.lag_ms) if has_lag else MUTED_DASH,
                status=status_html(snapshot.lag_status, status_reasons(snapshot)),
                # Sinks commit to their consumer group, which keeps no commit times.
                last_commit=MUTED_DASH
                if snapshot.type == "sink"
                else ago_html(snapshot.last_commit_at, now),
                malformed=SafeString(
                    f'<span class="warn">{num(snapshot.malformed)}</span>'
                    if snapshot.malformed
                    else "0"
                ),
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class SourcePartitionRow:
    key_hash: str
    partition: str
    topic: str  # empty: the worker's offsets topic
    offset: str | None  # None: tombstoned
    last_commit: SafeString
    stalled: bool
    commits: str
    rewinds: int
    chart_url: str


def source_partition_rows(
    offsets: list[SourceOffset], connector_url: str, worker_topic: str
) -> list[SourcePartitionRow]:
    now = timezone.now()
    return [
        SourcePartitionRow(
            key_hash=row.key_hash,
            # The maps exactly as Connect wrote them (field order included).
            partition=row.partition_text or compact_json(row.partition),
            topic="" if row.topic == worker_topic else row.topic,
            offset=row.offset_text if row.offset is not None else None,
            last_commit=ago_html(row.last_commit_at, now),
            stalled=row.stalled,
            commits=num(row.commits),
            rewinds=row.rewinds,
            chart_url=f"{connector_url}?partition={row.key_hash}",
        )
        for row in offsets
    ]


@dataclass(frozen=True, slots=True)
class SinkPartitionRow:
    name: str
    topic: str
    partition: int
    committed: str | None  # None: the group never committed
    log_start: str
    log_end: str
    lag_records: str
    lag_ms: str
    status: SafeString


def sink_partition_rows(
    lags: list[SinkPartitionLag], *, externally_managed: bool = False
) -> list[SinkPartitionRow]:
    """One row per topic-partition; a sink that keeps its offsets elsewhere shows no lag."""
    return [
        SinkPartitionRow(
            name=f"{row.topic}-{row.partition}",
            topic=row.topic,
            partition=row.partition,
            committed=None if row.committed is None else num(row.committed),
            log_start=num(row.log_start),
            log_end=num(row.log_end),
            lag_records=MUTED_DASH if externally_managed else num(row.lag_records),
            lag_ms=MUTED_DASH if externally_managed else duration_ms(row.lag_ms),
            status=status_html(None if externally_managed else row.status),
        )
        for row in lags
    ]
