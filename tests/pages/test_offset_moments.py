"""Offsets that hold a moment (epoch s, ms or µs under a time's name) show their number in full
with a readable UTC date beside it, never "1.79591G"; ordinary offsets are never dated."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from dashboard.pages.connector.svg import line_chart
from dashboard.pages.formatting import moments_html
from offsets.domain import epochs
from offsets.domain.history import progress_field
from offsets.models import SourceOffset
from tests.support import factories as make

AT = datetime(2026, 11, 28, 23, 31, 4, tzinfo=UTC)
MS = int(AT.timestamp() * 1000)


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("timestamp", MS, AT),  # JDBC's timestamp mode, ms
        ("ts_ms", MS, AT),
        ("ts_usec", MS * 1000, AT),  # Debezium PostgreSQL, µs
        ("ts_sec", MS // 1000, AT),  # Debezium MySQL, s
        ("last_poll_epoch_s", MS / 1000 + 0.5, AT + timedelta(milliseconds=500)),
        ("lastModifiedTime", MS, AT),
        ("created_at", MS, AT),
    ],
)
def test_a_field_named_for_time_holding_a_moment_is_dated(name, value, expected):
    assert epochs.moment(name, value) == expected


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("position", MS),  # a file position of a terabyte file: no time by its name
        ("lsn", MS),  # a log sequence number
        ("incrementing", MS),
        ("offset", MS),
        ("timestamp_nanos", MS),  # a fraction within a second, never a moment
        ("timestamp", 12_345),  # a time's name, but no moment between 2000 and 2100
        ("timestamp", 5_000_000_000_000),  # 2128 in ms, 1970 in µs: no moment
        ("timestamp", True),
        ("timestamp", "1795910000000"),
        ("timestamp", float("nan")),
        ("status", MS),  # "ts" inside a word is no time
        ("attempts", MS),
    ],
)
def test_ordinary_offsets_are_never_dated(name, value):
    assert epochs.moment(name, value) is None


def test_the_moments_of_an_offset_map_keep_its_order():
    offset = {"incrementing": 77, "timestamp": MS, "timestamp_nanos": 0}
    assert epochs.moments(offset) == [("timestamp", AT)]
    assert epochs.moments(None) == []
    assert epochs.moments([MS]) == []


def test_a_series_has_a_unit_only_when_every_value_is_a_moment_in_the_same_one():
    assert epochs.series_unit("timestamp", [MS, MS + 5_000]) == 0.001
    assert epochs.series_unit("last_poll_epoch_s", [MS / 1000]) == 1.0
    assert epochs.series_unit("timestamp", [MS, 12]) is None
    assert epochs.series_unit("timestamp", [MS, MS * 1000]) is None  # ms and µs mixed
    assert epochs.series_unit("position", [MS]) is None
    assert epochs.series_unit("timestamp", []) is None


def test_the_progress_field_is_the_one_the_progress_is_read_from():
    assert progress_field({"last_poll_epoch_s": 1.5, "count": 3}) == "last_poll_epoch_s"
    assert progress_field({"timestamp": MS, "incrementing": 4}) == "incrementing"
    assert progress_field({"name": "x"}) is None


def test_an_offset_s_moments_are_written_beside_it_as_utc_dates():
    html = moments_html({"incrementing": 7, "timestamp": MS})
    assert '<time datetime="2026-11-28T23:31:04Z">2026-11-28 23:31:04 UTC</time>' in html
    assert html.startswith('<div class="small muted" data-field="offset-moments">timestamp = ')
    assert moments_html({"position": MS}) == ""


def test_a_hostile_field_name_is_escaped_beside_its_date():
    html = moments_html({'<img src=x onerror="1">_ts': MS})
    assert "<img" not in html and "&lt;img src=x" in html


def test_a_chart_of_moments_labels_dates_and_hovers_the_full_number():
    start = AT - timedelta(hours=2)
    series = [(start + timedelta(minutes=10 * i), (MS / 1000 - 7200 + 600 * i)) for i in range(13)]
    chart = line_chart(series, title="Offset progress", zero_based=False, moment_unit=1.0)
    labels = [tick.label for tick in chart.y_ticks]
    assert all("G" not in label for label in labels)
    assert all(label.startswith("11-28 ") for label in labels), labels
    assert chart.hover[-1].label == "2026-11-28 23:31:04 UTC: 1795908664 (2026-11-28 23:31:04 UTC)"


def test_a_chart_of_ordinary_numbers_is_unchanged():
    series = [(AT, 1_795_910_000.0), (AT + timedelta(minutes=1), 1_795_920_000.0)]
    chart = line_chart(series, title="Offset progress", zero_based=False)
    assert any(tick.label.endswith("G") for tick in chart.y_ticks)


@pytest.mark.django_db
def test_the_partitions_table_shows_the_number_in_full_and_its_date(logged_in_client):
    cluster = make.cluster("prod")
    make.run(cluster)
    make.snapshot(cluster, "jdbc-source")
    offset = {"incrementing": 77, "timestamp": MS, "timestamp_nanos": 0}
    text = json.dumps(offset, separators=(",", ":"))
    [row] = make.source_offsets(cluster, "jdbc-source", 1)
    SourceOffset.objects.filter(pk=row.pk).update(offset=offset, offset_text=text, progress=77.0)
    html = logged_in_client.get("/clusters/prod/connectors/jdbc-source/").content.decode()
    assert f"&quot;timestamp&quot;:{MS}," in html or f'"timestamp":{MS},' in html
    assert 'data-field="offset-moments">timestamp = <time datetime="2026-11-28T23:31:04Z">' in html
