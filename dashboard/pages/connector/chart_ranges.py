"""The connector page's chart ranges: how far back its history charts reach (`?range=`).

Pure: the view reads the choice from the query string and asks for the data since then.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class ChartRange:
    key: str  # as the query string says it
    label: str
    span: timedelta | None  # None: the whole history kept

    def since(self, now: datetime) -> datetime | None:
        """Where the charts start for a request at `now` (None: from the first point)."""
        return None if self.span is None else now - self.span


# In the order the page offers them.
RANGES = (
    ChartRange("1h", "1 h", timedelta(hours=1)),
    ChartRange("6h", "6 h", timedelta(hours=6)),
    ChartRange("24h", "24 h", timedelta(hours=24)),
    ChartRange("7d", "7 d", timedelta(days=7)),
    ChartRange("all", "all", None),
)
# A day: an on-call person's "since when" reaches about as far, and a day of lag samples
# and commit buckets is a few hundred points.
DEFAULT = RANGES[2]
_BY_KEY = {choice.key: choice for choice in RANGES}


def chart_range(value: str | None) -> ChartRange:
    """The range a query string asks for; the default for none or one not offered (a stale
    bookmark or a typo is no reason for an error page)."""
    return _BY_KEY.get(value or "", DEFAULT)


# The widths a chart's bucket may have, in seconds: each says itself plainly ("per 5 min").
WIDTHS = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 604800)


def bucket_width(span: timedelta, stored: int, max_points: int) -> int:
    """The narrowest bucket, in seconds, that draws `span` in at most `max_points` buckets: a
    multiple of the `stored` width (what the data holds), one of WIDTHS when one fits."""
    needed = span.total_seconds() / max_points
    for width in WIDTHS:
        if width >= max(needed, stored) and width % stored == 0:
            return width
    return stored * max(1, math.ceil(needed / stored))


def width_label(seconds: int) -> str:
    """A bucket's width as its chart names it: "minute", "5 min", "hour", "6 h", "day"."""
    for unit, one, many in (
        (86400, "day", "{} days"),
        (3600, "hour", "{} h"),
        (60, "minute", "{} min"),
    ):
        if seconds % unit == 0:
            count = seconds // unit
            return one if count == 1 else many.format(count)
    return f"{seconds} s"
