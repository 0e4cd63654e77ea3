"""Server-rendered SVG charts: pure geometry from time series, drawn by the templates.

No JavaScript: the page carries the drawn path, so a test (or a browser without scripts) sees
exactly what a person sees.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

WIDTH = 720
HEIGHT = 200
# Room for the axis labels.
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 28
# Beyond this many points a series is thinned to the min and max of each pixel column pair.
MAX_POINTS = 600
# Points that say their time and value on hover (a `<title>` each): evenly picked beyond this,
# so a long series costs a bounded number of elements.
HOVER_POINTS = 120
# An offset may hold any double: the span of +-1.7e308 overflows and 5e-324 has no axis step.
# Values are drawn within these magnitudes (beyond, at the edge; below, at zero).
EXTREME = 1e300
TINY = 1e-300


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    label: str
    # Where the marker leads (the edit that caused a rewind), or nowhere.
    href: str = ""


@dataclass(frozen=True)
class EventLine:
    """Something that happened to the connector, across the plot at its time (an x only)."""

    x: float
    kind: str  # a CSS class: failed, paused, running, state, control, edit
    label: str
    href: str = ""


@dataclass(frozen=True)
class HoverPoint:
    """A point of the line a browser names on hover: where, and "12:01:05: 1,234 records"."""

    x: float
    y: float
    label: str


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    """A line chart ready to draw: coordinates in the SVG's own units."""

    title: str
    unit: str
    # What each point is: its bucket ("per 5 min", "worst per hour") or "every commit".
    bucket: str = ""
    width: int = WIDTH
    height: int = HEIGHT
    line: str = ""  # SVG path data of the series
    area: str = ""  # the same, closed down to the x axis
    points: int = 0  # points in the path (after thinning)
    values: int = 0  # points in the series (before thinning)
    dots: list[tuple[float, float]] = field(default_factory=list)  # a lone point is a dot
    markers: list[Marker] = field(default_factory=list)
    events: list[EventLine] = field(default_factory=list)
    hover: list[HoverPoint] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def empty(self) -> bool:
        return self.values == 0

    @property
    def rewinds(self) -> int:
        """Markers of rewinds no edit explains (the alarms)."""
        return sum(not marker.href for marker in self.markers)

    @property
    def edit_rewinds(self) -> int:
        """Markers of rewinds an applied edit wrote (each links to it)."""
        return sum(bool(marker.href) for marker in self.markers)


def line_chart(
    series: Sequence[tuple[datetime, float]],
    *,
    title: str,
    unit: str = "",
    bucket: str = "",
    markers: Sequence[tuple[datetime, float, str] | tuple[datetime, float, str, str]] = (),
    zero_based: bool = True,
    durations: bool = False,
    moment_unit: float | None = None,
    events: Sequence = (),
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Lay out a time series (oldest first) and optional labelled markers as a line chart.

    A marker is (time, value, label[, URL]); an event (`chart_events.Event`) is drawn across the
    plot. Values are seconds with `durations`, moments with `moment_unit` (dates label them).
    """
    bottom, right = height - BOTTOM, width - RIGHT
    # What the chart is, drawn or empty.
    shape = dict(title=title, unit=unit, bucket=bucket, width=width, height=height)
    points, marked, moments = _epoch_points(series, markers, events)
    if not points:
        return Chart(**shape, bottom=bottom, right=right)
    values = [value for _, value, *_ in (*points, *marked)]
    low, high, y_ticks, labels = _value_axis(values, zero_based, durations, moment_unit)
    left = _left_margin(labels)
    t0, t1 = _time_span([t for t, *_ in (*points, *marked, *moments)])
    frame = _Frame(left, right, bottom, t0, t1, low, high)
    thinned = _thin(points, MAX_POINTS)
    line = frame.path(thinned)
    x, y = frame.x, frame.y
    area = f"{line} L{x(thinned[-1][0])},{bottom} L{x(thinned[0][0])},{bottom} Z"
    return Chart(
        **shape,
        line=line,
        area=area,
        points=len(thinned),
        values=len(points),
        dots=[(x(t), y(value)) for t, value in thinned] if len(thinned) == 1 else [],
        markers=[Marker(x(t), y(value), *rest) for t, value, *rest in marked],
        events=[EventLine(x(t), event.kind, event.label, event.href) for t, event in moments],
        hover=_hover(frame, thinned, unit, durations, moment_unit),
        x_ticks=[Tick(x(t), label) for t, label in _time_ticks(t0, t1)],
        y_ticks=[Tick(y(v), label) for v, label in zip(y_ticks, labels, strict=True)],
        left=left,
        bottom=bottom,
        right=right,
    )


def _left_margin(labels: list[str]) -> int:
    """Room for the longest y label (~6.5 px a character at 11 px), never less than LEFT."""
    return max(LEFT, 10 + round(6.5 * max(len(label) for label in labels)))


def _epoch_points(
    series: Sequence[tuple[datetime, float]], markers: Sequence[tuple], events: Sequence = ()
) -> tuple[list[tuple[float, float]], list[tuple], list[tuple]]:
    """The series and the markers in epoch seconds and drawable values, NaN left out; the
    events with their times in epoch seconds."""
    # Epoch seconds once per point: datetime.timestamp() is most of the cost of a long series.
    points = [(at.timestamp(), _drawable(value)) for at, value in series if value == value]
    marked = [
        (at.timestamp(), _drawable(value), *rest)
        for at, value, *rest in markers
        if value == value  # NaN has no place on an axis
    ]
    return points, marked, [(event.at.timestamp(), event) for event in events]


def _value_axis(
    values: list[float], zero_based: bool, durations: bool, moment_unit: float | None
) -> tuple[float, float, list[float], list[str]]:
    """The y axis's low and high ends, its ticks and their labels (dates for moments)."""
    low, high = (0.0 if zero_based else min(values)), max(values)
    if zero_based:
        low = min(low, min(values))
    low, high, y_ticks = _duration_axis(low, high) if durations else _nice_axis(low, high)
    if moment_unit is not None:
        return low, high, y_ticks, _moment_labels(y_ticks, moment_unit)
    return low, high, y_ticks, _labels(y_ticks, durations)


def _time_span(times: list[float]) -> tuple[float, float]:
    """The x axis's ends in epoch seconds: two minutes around a single moment."""
    t0, t1 = min(times), max(times)
    if t1 == t0:
        return t0 - 60, t1 + 60
    return t0, t1


class _Frame:
    """The plot area: maps (epoch seconds, value) to SVG coordinates."""

    def __init__(
        self, left: int, right: int, bottom: int, t0: float, t1: float, low: float, high: float
    ) -> None:
        self.left, self.bottom, self.t0, self.low = left, bottom, t0, low
        self.x_scale = (right - left) / (t1 - t0)
        self.y_scale = (bottom - TOP) / (high - low)

    def x(self, t: float) -> float:
        return round(self.left + (t - self.t0) * self.x_scale, 1)

    def y(self, v: float) -> float:
        return round(self.bottom - (v - self.low) * self.y_scale, 1)

    def path(self, points: Sequence[tuple[float, float]]) -> str:
        """SVG path data through the points."""
        left, t0, x_scale = self.left, self.t0, self.x_scale
        bottom, low, y_scale = self.bottom, self.low, self.y_scale
        # Formatted straight to one decimal: round() and then str() would each convert the
        # float to decimal digits, twice the cost for the same text.
        return "M" + " L".join(
            f"{left + (t - t0) * x_scale:.1f},{bottom - (value - low) * y_scale:.1f}"
            for t, value in points
        )


def _drawable(value: float) -> float:
    if abs(value) < TINY:
        return 0.0
    return max(-EXTREME, min(EXTREME, value))


def _thin(series: Sequence[tuple[float, float]], limit: int) -> list[tuple[float, float]]:
    """Keep the first and last point and, per slice, the lowest and highest (peaks survive)."""
    if len(series) <= limit:
        return list(series)
    slices = limit // 2
    size = len(series) / slices
    kept: list[tuple[float, float]] = []
    for index in range(slices):
        chunk = series[int(index * size) : int((index + 1) * size)]
        if not chunk:
            continue
        low = min(chunk, key=lambda point: point[1])
        high = max(chunk, key=lambda point: point[1])
        kept.extend(sorted({low, high}, key=lambda point: point[0]))
    if kept[0] != series[0]:
        kept.insert(0, series[0])
    if kept[-1] != series[-1]:
        kept.append(series[-1])
    return kept


def _hover(
    frame: "_Frame",
    points: Sequence[tuple[float, float]],
    unit: str,
    durations: bool,
    moments: float | None = None,
) -> list[HoverPoint]:
    return [
        HoverPoint(frame.x(t), frame.y(value), hover_label(t, value, unit, durations, moments))
        for t, value in _spread(points, HOVER_POINTS)
    ]


def _spread(points: Sequence[tuple[float, float]], limit: int) -> list[tuple[float, float]]:
    """At most `limit` points, evenly picked, the first and the last always among them."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(index * step)] for index in range(limit)]


def hover_label(
    t: float, value: float, unit: str, durations: bool, moments: float | None = None
) -> str:
    """What a point says on hover: its time (UTC) and its value, exactly (a moment in full
    digits, with its date)."""
    when = datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    if durations:
        return f"{when} UTC: {format_duration(value)}"
    if moments is not None:
        digits = str(int(value)) if value == int(value) else f"{value:.6f}".rstrip("0")
        at = datetime.fromtimestamp(value * moments, tz=UTC)
        return f"{when} UTC: {digits} ({at:%Y-%m-%d %H:%M:%S} UTC)"
    if value == int(value) and abs(value) < 1e15:
        shown = f"{int(value):,}"
    else:
        shown = f"{value:,.6g}"
    # A short unit only ("records", "commits"): a long one is said under the chart.
    suffix = f" {unit}" if unit and len(unit) <= 12 else ""
    return f"{when} UTC: {shown}{suffix}"


def _nice_axis(low: float, high: float, ticks: int = 4) -> tuple[float, float, list[float]]:
    if high == low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    end = math.ceil(high / step) * step
    count = round((end - start) / step)
    return start, end, [start + i * step for i in range(count + 1)]


# Steps of a duration axis, in seconds: round minutes, hours and days.
_DURATION_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
)


def _duration_axis(low: float, high: float, ticks: int = 4) -> tuple[float, float, list[float]]:
    if high <= low:
        high = low + 60
    raw = (high - low) / ticks
    step = next((s for s in _DURATION_STEPS if s >= raw), _DURATION_STEPS[-1])
    start = math.floor(low / step) * step
    end = math.ceil(high / step) * step
    count = round((end - start) / step)
    return start, end, [start + i * step for i in range(count + 1)]


def format_duration(seconds: float) -> str:
    """Axis labels of durations: 45s, 5m, 1h 30m, 2d."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        minutes, rest = divmod(seconds, 60)
        return f"{minutes}m" if not rest else f"{minutes}m {rest}s"
    if seconds < 86400:
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h" if not rest else f"{hours}h {rest // 60}m"
    days, rest = divmod(seconds, 86400)
    return f"{days}d" if not rest else f"{days}d {rest // 3600}h"


def _time_ticks(t0: float, t1: float, ticks: int = 5) -> list[tuple[float, str]]:
    """Evenly spaced time labels, precise enough to differ (seconds for short spans)."""
    span = t1 - t0
    if span <= 600:
        fmt = "%H:%M:%S"
    elif span <= 86_400:
        fmt = "%H:%M"
    else:
        fmt = "%m-%d %H:%M"
    labels = []
    for t in (t0 + span * i / (ticks - 1) for i in range(ticks)):
        text = datetime.fromtimestamp(t, tz=UTC).strftime(fmt)
        if not labels or labels[-1][1] != text:
            labels.append((t, text))
    return labels


def _labels(values: list[float], durations: bool) -> list[str]:
    """Axis labels, with as many digits as it takes for neighbours to differ.

    A narrow band of large values (epoch seconds between 1.7950G and 1.7954G) would otherwise
    print the same label on every line.
    """
    if durations:
        return [format_duration(value) for value in values]
    for digits in range(3, 13):
        labels = [format_number(value, digits) for value in values]
        if len(set(labels)) == len(labels):
            break
    return labels


def _moment_labels(values: list[float], moments: float) -> list[str]:
    """Axis labels of moments (in units of `moments` seconds) as UTC dates, as precise as it
    takes for neighbours to differ."""
    at = [datetime.fromtimestamp(value * moments, tz=UTC) for value in values]
    for fmt in ("%Y-%m-%d", "%m-%d %H:%M", "%m-%d %H:%M:%S"):
        labels = [moment.strftime(fmt) for moment in at]
        if len(set(labels)) == len(labels):
            break
    return labels


def format_number(value: float, digits: int = 3) -> str:
    """Short axis labels: 950, 12.5k, 3.2M, 1.7G (`digits` significant digits)."""
    magnitude = abs(value)
    if magnitude >= 1e15:
        return f"{value:.{digits}g}"
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:.{digits}g}{suffix}"
    if value == int(value):
        return str(int(value))
    return f"{value:.{digits}g}"
