"""The SVG chart geometry (pure)."""

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.pages.connector import chart_ranges
from dashboard.pages.connector import svg as charts
from dashboard.pages.connector.chart_events import Event
from dashboard.pages.connector.svg import HOVER_POINTS, format_number, line_chart

T0 = datetime(2026, 9, 21, 12, 0, tzinfo=UTC)


def series(values):
    return [(T0 + timedelta(minutes=i), v) for i, v in enumerate(values)]


def test_an_empty_series_is_an_empty_chart():
    chart = line_chart([], title="t")
    assert chart.empty
    assert chart.line == ""


def test_every_point_becomes_a_path_vertex_inside_the_plot():
    chart = line_chart(series([0, 5, 10, 5]), title="t")
    assert chart.points == 4
    assert chart.line.count("L") == 3
    xs = [float(p.split(",")[0].lstrip("ML")) for p in chart.line.split(" ")]
    assert xs[0] == chart.left and xs[-1] == chart.right
    assert xs == sorted(xs)


def test_higher_values_are_drawn_higher():
    chart = line_chart(series([0, 10]), title="t")
    first, last = (float(p.split(",")[1]) for p in chart.line.lstrip("M").split(" L"))
    assert first == chart.bottom
    assert last < first


def test_a_single_point_is_drawn_as_a_dot():
    chart = line_chart(series([7]), title="t")
    assert chart.points == 1
    assert len(chart.dots) == 1


def test_markers_sit_on_their_values():
    data = series([100, 200, 50, 60])
    chart = line_chart(data, title="t", markers=[(data[2][0], 50, "rewind")], zero_based=False)
    vertices = chart.line.lstrip("M").split(" L")
    marker = chart.markers[0]
    assert f"{marker.x},{marker.y}" == vertices[2]
    assert marker.label == "rewind"


def test_long_series_are_thinned_but_keep_peaks_and_ends():
    values = [1.0] * 5000
    values[2500] = 999.0
    chart = line_chart(series(values), title="t")
    assert chart.values == 5000
    assert chart.points <= 602
    top = min(float(p.split(",")[1]) for p in chart.line.lstrip("M").split(" L"))
    assert top < chart.top + 1  # 999 on an axis to 1k: the peak survived


def test_axis_labels_are_short():
    assert [format_number(v) for v in (0, 950, 12_500, 3_200_000, 1.5)] == [
        "0",
        "950",
        "12.5k",
        "3.2M",
        "1.5",
    ]
    chart = line_chart(series([0, 1234]), title="t")
    assert chart.y_ticks[-1].label in ("1.25k", "1.5k", "2k")
    long = line_chart([(T0, 0), (T0 + timedelta(hours=3), 1)], title="t")
    assert [tick.label for tick in long.x_ticks] == ["12:00", "12:45", "13:30", "14:15", "15:00"]


def test_short_spans_label_seconds_and_never_repeat_a_label():
    chart = line_chart([(T0, 1), (T0 + timedelta(seconds=20), 2)], title="t")
    labels = [tick.label for tick in chart.x_ticks]
    assert labels[0] == "12:00:00" and labels[-1] == "12:00:20"
    assert len(labels) == len(set(labels))


def test_a_duration_axis_steps_in_round_durations():
    chart = line_chart(series([0, 7200]), title="t", durations=True)
    assert [tick.label for tick in chart.y_ticks] == ["0s", "30m", "1h", "1h 30m", "2h"]


def test_a_narrow_band_of_large_values_gets_labels_that_differ():
    chart = line_chart(series([1_795_000_000, 1_795_400_000]), title="t", zero_based=False)
    labels = [tick.label for tick in chart.y_ticks]
    assert len(set(labels)) == len(labels)
    assert labels[0].startswith("1.795")


EXTREMES = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [1.7e308, -1.7e308, 5e-324, -5e-324, 0.0, -0.0, float("inf"), float("nan")]
)


@given(st.lists(EXTREMES, min_size=1, max_size=20), st.booleans())
def test_any_double_an_offset_can_hold_draws_inside_the_plot(values, zero_based):
    start = datetime(2026, 1, 1, tzinfo=UTC)
    series = [(start + timedelta(seconds=i), value) for i, value in enumerate(values)]
    chart = line_chart(series, title="progress", zero_based=zero_based)
    vertices = [
        tuple(float(c) for c in vertex.split(","))
        for vertex in chart.line[1:].split(" L")
        if chart.line
    ]
    assert len(vertices) == chart.points == sum(1 for value in values if value == value)
    for x, y in vertices:
        assert chart.left <= x <= chart.right
        assert chart.top - 0.05 <= y <= chart.bottom + 0.05
    assert all(tick.label and "inf" not in tick.label for tick in chart.y_ticks)


def test_the_largest_doubles_get_an_axis_with_exponent_labels():
    start = datetime(2026, 1, 1, tzinfo=UTC)
    chart = line_chart([(start, -1.7e308), (start + timedelta(seconds=5), 1.7e308)], title="p")
    assert chart.y_ticks[0].label == "-1e+300" and chart.y_ticks[-1].label == "1e+300"


def test_each_point_names_its_time_and_value_on_hover():
    chart = line_chart(series([0, 1234, 5]), title="t", unit="records")
    assert [point.label for point in chart.hover] == [
        "2026-09-21 12:00:00 UTC: 0 records",
        "2026-09-21 12:01:00 UTC: 1,234 records",
        "2026-09-21 12:02:00 UTC: 5 records",
    ]
    xs = [float(p.split(",")[0].lstrip("ML")) for p in chart.line.split(" ")]
    assert [point.x for point in chart.hover] == xs
    durations = line_chart(series([90.0]), title="t", unit="time behind", durations=True)
    assert durations.hover[0].label == "2026-09-21 12:00:00 UTC: 1m 30s"


def test_a_long_series_names_a_bounded_number_of_points_first_and_last_among_them():
    chart = line_chart(series(range(1000)), title="t")
    assert len(chart.hover) == HOVER_POINTS
    assert chart.hover[0].label.endswith(": 0") and chart.hover[-1].label.endswith(": 999")


@pytest.mark.parametrize(
    ("value", "key"),
    [
        ("1h", "1h"),
        ("6h", "6h"),
        ("7d", "7d"),
        ("all", "all"),
        (None, "24h"),
        ("", "24h"),
        ("2h", "24h"),
        ("ALL", "24h"),
        ("1h;drop", "24h"),
    ],
)
def test_a_chart_range_not_offered_falls_back_to_a_day(value, key):
    assert chart_ranges.chart_range(value).key == key


def test_a_range_starts_its_span_before_the_refresh_and_all_has_no_start():
    end = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    assert chart_ranges.chart_range("6h").since(end) == end - timedelta(hours=6)
    assert chart_ranges.chart_range("all").since(end) is None


def test_an_event_is_drawn_across_the_plot_and_the_time_axis_reaches_it():
    start = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    series = [(start + timedelta(minutes=i), float(i)) for i in range(10)]
    stop = Event(start + timedelta(minutes=20), "paused", "stopped", "")
    edit = Event(start + timedelta(minutes=5), "edit", "edit #3", "/e/3/")
    chart = charts.line_chart(series, title="t", events=[edit, stop])
    first, last = chart.events
    assert (first.kind, first.label, first.href) == ("edit", "edit #3", "/e/3/")
    # The stop after the last point ends the axis.
    assert last.x == chart.right
    assert chart.left < first.x < last.x
    assert charts.line_chart([], title="t", events=[stop]).events == []


@pytest.mark.parametrize(
    ("span", "stored", "width"),
    [
        # Few enough stored buckets: drawn as stored.
        (timedelta(hours=1), 300, 300),
        (timedelta(hours=24), 300, 300),
        # A week of five-minute buckets is 2,016: summed by the hour.
        (timedelta(days=7), 300, 3600),
        (timedelta(days=2), 60, 600),
        (timedelta(hours=4), 60, 60),
        # Beyond a week a bucket: whole multiples of the stored width.
        (timedelta(days=3000), 300, 900_000),
        # A stored width only some listed ones are multiples of: the first of those.
        (timedelta(hours=10), 45, 900),
        (timedelta(0), 300, 300),
    ],
)
def test_a_charts_bucket_is_the_narrowest_that_draws_its_range(span, stored, width):
    assert chart_ranges.bucket_width(span, stored, 288) == width


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (60, "minute"),
        (300, "5 min"),
        (3600, "hour"),
        (21600, "6 h"),
        (86400, "day"),
        (604800, "7 days"),
        (45, "45 s"),
    ],
)
def test_a_bucket_names_its_width(seconds, label):
    assert chart_ranges.width_label(seconds) == label


def test_a_chart_names_its_bucket():
    assert line_chart(series([1, 2]), title="Commits", bucket="per 5 min").bucket == "per 5 min"
