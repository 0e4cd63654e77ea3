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


@dataclass(frozen=True)
class Marker:
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
    width: int = WIDTH
    height: int = HEIGHT
    line: str = ""  # SVG path data of the series
    area: str = ""  # the same, closed down to the x axis
    points: int = 0  # points in the path (after thinning)
    values: int = 0  # points in the series (before thinning)
    dots: list[tuple[float, float]] = field(default_factory=list)  # a lone point is a dot
    markers: list[Marker] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def empty(self) -> bool:
        return self.values == 0


def line_chart(
    series: Sequence[tuple[datetime, float]],
    *,
    title: str,
    unit: str = "",
    markers: Sequence[tuple[datetime, float, str]] = (),
    zero_based: bool = True,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Lay out a time series (oldest first) and optional labelled markers as a line chart."""
    bottom, right = height - BOTTOM, width - RIGHT
    if not series:
        return Chart(title=title, unit=unit, width=width, height=height, bottom=bottom, right=right)
    times = [at.timestamp() for at, _ in series] + [at.timestamp() for at, _, _ in markers]
    values = [value for _, value in series] + [value for _, value, _ in markers]
    t0, t1 = min(times), max(times)
    low, high = (0.0 if zero_based else min(values)), max(values)
    if zero_based:
        low = min(low, min(values))
    low, high, y_ticks = _nice_axis(low, high)
    if t1 == t0:
        t0, t1 = t0 - 60, t1 + 60

    def x(t: float) -> float:
        return round(LEFT + (t - t0) / (t1 - t0) * (right - LEFT), 1)

    def y(v: float) -> float:
        return round(bottom - (v - low) / (high - low) * (bottom - TOP), 1)

    thinned = _thin(series, MAX_POINTS)
    coordinates = [(x(at.timestamp()), y(value)) for at, value in thinned]
    line = "M" + " L".join(f"{px},{py}" for px, py in coordinates)
    area = f"{line} L{coordinates[-1][0]},{bottom} L{coordinates[0][0]},{bottom} Z"
    return Chart(
        title=title,
        unit=unit,
        width=width,
        height=height,
        line=line,
        area=area,
        points=len(coordinates),
        values=len(series),
        dots=coordinates if len(coordinates) == 1 else [],
        markers=[Marker(x(at.timestamp()), y(value), label) for at, value, label in markers],
        x_ticks=[Tick(x(t), label) for t, label in _time_ticks(t0, t1)],
        y_ticks=[Tick(y(v), format_number(v)) for v in y_ticks],
        bottom=bottom,
        right=right,
    )


def _thin(series: Sequence[tuple[datetime, float]], limit: int) -> list[tuple[datetime, float]]:
    """Keep the first and last point and, per slice, the lowest and highest (peaks survive)."""
    if len(series) <= limit:
        return list(series)
    slices = limit // 2
    size = len(series) / slices
    kept: list[tuple[datetime, float]] = []
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


def _time_ticks(t0: float, t1: float, ticks: int = 5) -> list[tuple[float, str]]:
    span = t1 - t0
    fmt = "%H:%M" if span <= 86_400 else "%m-%d %H:%M"
    return [
        (t, datetime.fromtimestamp(t, tz=UTC).strftime(fmt))
        for t in (t0 + span * i / (ticks - 1) for i in range(ticks))
    ]


def format_number(value: float) -> str:
    """Short axis labels: 950, 12.5k, 3.2M, 1.7G."""
    magnitude = abs(value)
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:.3g}{suffix}"
    if value == int(value):
        return str(int(value))
    return f"{value:.3g}"
