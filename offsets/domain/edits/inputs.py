"""What people type into an edit: durations, and the error that names the field at fault."""

import re
from datetime import timedelta


class EditRuleError(ValueError):
    """An edit that cannot be staged, naming the input field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


_ISO_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
_SHORT_DURATION = re.compile(r"^(?P<amount>\d+)\s*(?P<unit>[smhdw])$")
_SHORT_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


# Longer than any retention that makes sense, short enough that "now minus it" is a date.
MAX_DURATION = timedelta(days=36_500)


def parse_duration(text: str) -> timedelta:
    """Parse an ISO-8601 duration (``PT1H30M``, ``P1DT2H``, as ``--by-duration``) or ``90m``.

    Raises ValueError for anything else, and for durations beyond MAX_DURATION (100 years):
    timedelta itself overflows past 999,999,999 days, and subtracting even 100,000 years
    from now leaves the calendar.
    """
    cleaned = text.strip()
    short = _SHORT_DURATION.match(cleaned.lower())
    if short:
        parts = {_SHORT_UNITS[short["unit"]]: float(short["amount"])}
    else:
        match = _ISO_DURATION.match(cleaned.upper())
        if not match or cleaned.upper() in ("P", "PT") or cleaned.upper().endswith("T"):
            raise ValueError(f"{text!r} is not a duration like PT1H30M, P2D or 90m")
        parts = {name: float(value) for name, value in match.groupdict().items() if value}
    # float(): the digits may be any number long; a float overflows to inf, never raises.
    seconds = sum(value * _UNIT_SECONDS[name] for name, value in parts.items())
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{text!r} is too long: at most {MAX_DURATION.days:,} days")
    return timedelta(**parts)


_UNIT_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
