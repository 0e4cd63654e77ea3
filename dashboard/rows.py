"""Table rows written in Python once per page: values formatted, then the row's HTML.

A list page shows 50 rows of ~10 cells. Measured on 1,000 connectors, the template loop over
them (a variable node, an escape and a lookup per cell: ~900 nodes a page) was the largest
part of the list's and the detail's server time; an f-string per row costs a tenth of that.
So each table's `<tbody>` rows come from here, every value escaped here, and the templates
keep the table's frame (headings, pager) and everything that is not a row.

The rows are cached per refresh run with the pages' data (dashboard/page_cache.py), so they
come as `AgedHtml`: the only cells that change between two requests of the same run are the
ages ("3m 05s ago"), written when the page is served.
"""

from datetime import datetime
from html import escape
from urllib.parse import quote

from django.utils.safestring import SafeString
from django.utils.timezone import localtime

from dashboard.formatting import (
    DASH,
    MUTED_DASH,
    NEVER,
    AgedHtml,
    compact_json,
    duration_ms,
    name_html,
    num,
    status_html,
)
from offsets.formats.connector_paths import to_segment
from offsets.models import ConnectorSnapshot, RewindEvent, SinkPartitionLag, SourceOffset
from offsets.services.snapshots import status_reasons

TIMES = "\u00d7"


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
    # A task that fails leaves its connector RUNNING (Connect restarts nothing by itself):
    # without this the list would call such a connector healthy.
    failed = sum(state == "FAILED" for state in snapshot.task_states.values())
    if failed and snapshot.runtime_state != "FAILED":
        runtime += (
            f' <span class="state state-failed">{failed} task{"s" if failed > 1 else ""}'
            " FAILED</span>"
        )
    return SafeString(
        f'<span class="small">{escape(snapshot.target_state or DASH)}</span> / {runtime}'
    )


def connector_rows(snapshots: list[ConnectorSnapshot], base_url: str, export_url: str) -> AgedHtml:
    """The `<tr>`s of the connectors list; `base_url` is the cluster's connectors URL."""
    export = escape(export_url)
    html: list[str | datetime] = []
    for snapshot in snapshots:
        has_lag = snapshot.type == "sink" and not snapshot.offsets_managed_externally
        name = escape(snapshot.name)
        url = escape(f"{base_url}{quote(to_segment(snapshot.name), safe='~')}/")
        lag_records = num(snapshot.lag_records) if has_lag else MUTED_DASH
        lag_ms = duration_ms(snapshot.lag_ms) if has_lag else MUTED_DASH
        # Sinks commit to their consumer group, which keeps no commit times.
        last_commit = MUTED_DASH if snapshot.type == "sink" else snapshot.last_commit_at or NEVER
        malformed = (
            f'<span class="warn">{num(snapshot.malformed)}</span>' if snapshot.malformed else "0"
        )
        html.append(
            f'<tr data-connector="{name}">'
            f'<td><a href="{url}">{name_html(snapshot.name)}</a>{_badges(snapshot)}'
            f'<div class="small edit-links"><a href="{url}edits/">offsets &amp; edits</a> · '
            f'<a href="{export}?connector={escape(quote(snapshot.name, safe=""))}" download>'
            "export</a></div></td>"
            f'<td data-field="type">{escape(snapshot.type)}</td>'
            f'<td data-field="state" class="nowrap">{_state(snapshot)}</td>'
            f'<td class="num" data-field="tasks">{num(snapshot.task_count)}</td>'
            f'<td class="num" data-field="partitions">{num(snapshot.partitions)}</td>'
            f'<td class="num" data-field="lag-records">{lag_records}</td>'
            f'<td class="num" data-field="lag-ms">{lag_ms}</td>'
            f'<td class="nowrap" data-field="status">'
            f"{status_html(snapshot.lag_status, status_reasons(snapshot))}</td>"
            '<td class="num" data-field="last-commit">'
        )
        html.append(last_commit)
        html.append(f'</td><td class="num" data-field="malformed">{malformed}</td></tr>\n')
    return AgedHtml(html)


def source_partition_rows(
    offsets: list[SourceOffset], connector_url: str, worker_topic: str
) -> AgedHtml:
    """The `<tr>`s of a source connector's partitions table."""
    html: list[str | datetime] = []
    for row in offsets:
        chart_url = escape(f"{connector_url}?partition={row.key_hash}")
        # The maps exactly as Connect wrote them (field order included).
        partition = escape(row.partition_text or compact_json(row.partition))
        topic = (
            ""
            if row.topic == worker_topic
            else f' <span class="small">in <code>{escape(row.topic)}</code></span>'
        )
        tombstoned = ' class="tombstoned"' if row.offset is None else ""
        if row.offset is None:
            offset = '<span class="muted">deleted (tombstone)</span>'
        else:
            offset = (
                f'<code class="map">{escape(row.offset_text or compact_json(row.offset))}</code>'
            )
        stalled = ' <span class="status status-stall">STALL</span>' if row.stalled else ""
        rewinds = f'<span class="status status-rewind">{row.rewinds}</span>' if row.rewinds else "0"
        html.append(
            f'<tr data-partition="{escape(row.key_hash)}"{tombstoned}>'
            f'<td><code class="map">{partition}</code>{topic}</td>'
            f'<td>{offset}</td><td class="num">'
        )
        html.append(row.last_commit_at or NEVER)
        html.append(
            f"{stalled}</td>"
            f'<td class="num" data-field="commits">{num(row.commits)}</td>'
            f'<td class="num" data-field="rewinds">{rewinds}</td>'
            f'<td><a href="{chart_url}#progress" hx-get="{chart_url}" hx-target="#progress" '
            'hx-swap="outerHTML" class="chart-link">chart</a></td>'
            "</tr>\n"
        )
    return AgedHtml(html)


def sink_partition_rows(
    lags: list[SinkPartitionLag], *, externally_managed: bool = False
) -> AgedHtml:
    """The `<tr>`s of a sink's topic-partitions (no lag shown if it keeps offsets elsewhere)."""
    html = []
    for row in lags:
        topic = escape(row.topic)
        if row.committed is None:
            committed = '<span class="muted">no commit</span>'
        else:
            committed = num(row.committed)
        lag_records = MUTED_DASH if externally_managed else num(row.lag_records)
        lag_ms = MUTED_DASH if externally_managed else duration_ms(row.lag_ms)
        status = status_html(None if externally_managed else row.status)
        html.append(
            f'<tr data-partition="{topic}-{row.partition}">'
            f"<td><code>{topic}</code>-{row.partition}</td>"
            f'<td class="num" data-field="committed">{committed}</td>'
            f'<td class="num">{num(row.log_start)}</td>'
            f'<td class="num">{num(row.log_end)}</td>'
            f'<td class="num" data-field="lag-records">{lag_records}</td>'
            f'<td class="num" data-field="lag-ms">{lag_ms}</td>'
            f"<td>{status}</td>"
            "</tr>\n"
        )
    # No ages in a sink's rows: one part, cached as it is.
    return AgedHtml(html)


def rewind_rows(rewinds: list[RewindEvent]) -> SafeString:
    """The `<tr>`s of a source connector's rewinds (times as the date filter would write them:
    "Y-m-d H:i:s T" in the current time zone)."""
    html = []
    for rewind in rewinds:
        at = localtime(rewind.at)
        html.append(
            f"<tr><td>{at:%Y-%m-%d %H:%M:%S} {escape(at.tzname() or '')}</td>"
            f'<td><code class="map">{escape(compact_json(rewind.partition))}</code></td>'
            f'<td class="num">{num(rewind.from_progress)}</td>'
            f'<td class="num">{num(rewind.to_progress)}</td>'
            f'<td class="small"><code>{escape(rewind.topic)}</code>'
            f"[{rewind.kafka_partition}]@{rewind.kafka_offset}</td></tr>\n"
        )
    return SafeString("".join(html))
