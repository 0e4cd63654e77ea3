"""Offset fields that hold a moment: which ones, in which unit, and the moment they say. Pure.

Sources keep times in their offsets (JDBC's `timestamp` in ms, Debezium's `ts_usec`, a
poller's `last_poll_epoch_s`); shown as plain numbers they read as "1.79591G". A field is
dated only when both its name says time and its value is a moment between 2000 and 2100 in
seconds, milliseconds or microseconds: a file position, a log sequence number or an
incrementing id can reach those numbers, but not under a name like these.
"""

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from offsets.domain.history import finite_number

# 2000-01-01 and 2100-01-01 in seconds since the epoch: the moments an offset plausibly holds.
_FIRST, _LAST = 946_684_800, 4_102_444_800
# Seconds per unit, by magnitude: the three ranges lie 1000 times apart and never overlap.
_UNITS = (1.0, 0.001, 0.000_001)
# Words of a field's name that say it holds a moment ("ts_ms", "lastPollEpochS", "timestamp").
_TIME_WORDS = frozenset({"ts", "time", "timestamp", "epoch", "date", "datetime", "at", "when"})
# A fraction within a second (JDBC's `timestamp_nanos`), never a moment of its own.
_FRACTION_WORDS = frozenset({"nanos", "nano", "ns"})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def _words(name: str) -> set[str]:
    return {word.lower() for word in _WORDS.findall(name)}


def names_a_time(name: str) -> bool:
    """Whether a field's name says it holds a moment (`timestamp`, `ts_usec`, `lastPollAt`)."""
    words = _words(name)
    return bool(words & _TIME_WORDS) and not words & _FRACTION_WORDS


def unit_of(value: object) -> float | None:
    """Seconds per unit of `value` read as a moment between 2000 and 2100 (1 for seconds,
    0.001 for ms, 0.000001 for µs); None for a value that is no such moment in any of them."""
    number = finite_number(value)
    if number is None:
        return None
    for unit in _UNITS:
        if _FIRST <= number * unit < _LAST:
            return unit
    return None


def moment(name: str, value: object) -> datetime | None:
    """The moment an offset's field holds, if its name says time and its value is one."""
    if not names_a_time(name):
        return None
    unit = unit_of(value)
    return None if unit is None else datetime.fromtimestamp(float(value) * unit, tz=UTC)  # type: ignore[arg-type]


def moments(offset: object) -> list[tuple[str, datetime]]:
    """Each field of an offset map that holds a moment, with it, in the map's order."""
    if not isinstance(offset, Mapping):
        return []
    found = ((str(name), moment(str(name), value)) for name, value in offset.items())
    return [(name, at) for name, at in found if at is not None]


def series_unit(name: str, values: Iterable[float]) -> float | None:
    """The one unit every value of a field's series is a moment in (seconds per unit), or
    None: its name says no time, or a value is no moment, or the values mix units."""
    if not names_a_time(name):
        return None
    units = {unit_of(value) for value in values}
    return units.pop() if len(units) == 1 and None not in units else None
