"""How the pages write numbers, durations, ages, JSON maps and statuses (pure functions).

Plain f-strings and `html.escape`: the table templates call these thousands of times per
page, where Django's lazy-aware `format_html` would cost several times more.
"""

import re
from collections.abc import Iterable
from datetime import datetime
from html import escape

from django.utils.http import content_disposition_header
from django.utils.safestring import SafeString

from dashboard.pages import statuses
from offsets.domain import epochs, pauses
from offsets.formats import jackson

DASH = "\u2013"  # en dash: no value
MUTED_DASH = SafeString(f'<span class="muted">{DASH}</span>')
NEVER = SafeString('<span class="muted">never</span>')


def num(value: int | float | None) -> str:
    """12345 -> 12,345; None -> a dash."""
    if value is None or value == "":
        return DASH
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def duration(seconds: float) -> str:
    """45s, 12m 05s, 2h 03m or 3d 4h."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def duration_ms(value: int | None) -> str:
    if value is None:
        return DASH
    return duration(max(0, value) / 1000)


def since(at: datetime | None, now: datetime) -> str:
    """How long before `now` (an age), or a dash."""
    if at is None:
        return DASH
    return duration(max(0.0, (now - at).total_seconds()))


# Characters a name cannot show as themselves: control characters and lone surrogates.
_INVISIBLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED_ESCAPES.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )


def name_html(name: str) -> SafeString:
    """A connector's name as HTML: escaped, control characters and lone surrogates written as
    escapes (`\\n`, `\\x00`, `\\ud800`), and an empty name said so, so every name can be seen
    and clicked."""
    if not name:
        return SafeString('<span class="muted">(empty name)</span>')
    return SafeString(escape(_INVISIBLE.sub(_visible, name)))


def name_text(name: str) -> str:
    """A connector's name as plain text (titles, attributes), written as `name_html` writes it."""
    return _INVISIBLE.sub(_visible, name) if name else "(empty name)"


def compact_json(value: object) -> str:
    """A partition or offset map as compact JSON: raw Unicode, lone surrogates escaped."""
    if value is None:
        return "null"
    return jackson.dumps_text(value)


def moments_html(offset: object) -> SafeString:
    """The moments an offset's fields hold (`offsets.domain.epochs`) as readable UTC dates,
    shown beside the map whose numbers stay in full; "" for an offset holding none."""
    found = epochs.moments(offset)
    if not found:
        return SafeString("")
    dates = ", ".join(
        f'{escape(name)} = <time datetime="{at:%Y-%m-%dT%H:%M:%S}Z">{at:%Y-%m-%d %H:%M:%S} UTC</time>'
        for name, at in found
    )
    return SafeString(f'<div class="small muted" data-field="offset-moments">{dates}</div>')


def status_html(
    status: str | None, reasons: list[str] | tuple[str, ...] = (), *, paused: bool = False
) -> SafeString:
    """The lag status as a coloured badge, then one badge per reason (STALL, STOP, REWIND,
    "no commit yet"), each titled with what it means (dashboard/pages/statuses.py).

    `paused` (or the status PAUSED): its owner paused or stopped the connector, so its stopped
    lag is shown as "paused" rather than as ERR STOP (offsets.domain.pauses).
    """
    badges = []
    paused = paused or status == pauses.PAUSED
    reasons = pauses.shown_reasons(reasons, paused=paused)
    if paused:
        badges.append(_badge(statuses.PAUSED, "status", "paused"))
    elif status:
        badges.append(_badge(status, "status", status.lower()))
    for reason in reasons:
        badges.append(_badge(reason, "reason", reason.lower().replace(" ", "-")))
    if not badges:
        return SafeString(f'<span class="status status-none" data-status="">{DASH}</span>')
    return SafeString(" ".join(badges))


def _badge(name: str, kind: str, css: str) -> str:
    meaning = statuses.meaning(name)
    title = f' title="{escape(meaning)}"' if meaning else ""
    return (
        f'<span class="status status-{escape(css)}" data-{kind}="{escape(name)}"{title}>'
        f"{escape(name)}</span>"
    )


def ago_html(at: datetime | None, now: datetime) -> SafeString:
    """'12m 05s ago' with the exact time as a tooltip; 'never' without a time."""
    if at is None:
        return NEVER
    return SafeString(f'<span title="{at:%Y-%m-%d %H:%M:%S} UTC">{since(at, now)} ago</span>')


# Where a row template leaves a time for `AgedHtml` to fill (`{% age_hole %}`): an HTML
# comment, which no autoescaped value can hold, so only the template's own markup makes one.
_AGE_HOLE = re.compile(r"<!--age (\S+)-->")


def age_hole(at: datetime | None) -> SafeString:
    """A hole for `at`'s age in HTML that `AgedHtml.from_html` reads; 'never' without a time."""
    if at is None:
        return NEVER
    return SafeString(f"<!--age {at.isoformat()}-->")


class AgedHtml:
    """HTML that stays the same until the next refresh but for its ages ('3m 05s ago').

    Table rows are cached per refresh run (dashboard/pages/cache.py) as this: the rendered
    template with a hole for each time, filled in against the time of each request by
    `render()`. So a cached page pays one `ago_html` per time shown, not the rows' template.
    """

    __slots__ = ("parts",)

    def __init__(self, parts: Iterable[str | datetime]) -> None:
        # Adjacent text joined once here, so `render()` joins a few long strings.
        merged: list[str | datetime] = []
        for part in parts:
            if isinstance(part, str) and merged and isinstance(merged[-1], str):
                merged[-1] += part
            else:
                merged.append(part if isinstance(part, datetime) else str(part))
        self.parts = tuple(merged)

    @classmethod
    def from_html(cls, html: str) -> "AgedHtml":
        """The rendered HTML with each `age_hole` made a hole for its time."""
        # re.split puts each hole's captured time between the texts around it.
        parts = _AGE_HOLE.split(html)
        return cls(
            datetime.fromisoformat(part) if index % 2 else part for index, part in enumerate(parts)
        )

    def __getstate__(self) -> tuple[str | datetime, ...]:
        return self.parts

    def __setstate__(self, parts: tuple[str | datetime, ...]) -> None:
        self.parts = parts

    def render(self, now: datetime) -> SafeString:
        """The HTML, each time written as `ago_html(time, now)`."""
        return SafeString(
            "".join(part if isinstance(part, str) else ago_html(part, now) for part in self.parts)
        )


# Characters a download name never keeps: path separators, control characters (a CR or LF
# would end the header) and surrogates (no UTF-8 form for `filename*`): the characters a name
# cannot show as themselves, and the separators.
_NOT_IN_FILENAME = re.compile(r"[/\\]|" + _INVISIBLE.pattern)


def attachment(filename: str) -> str:
    """A Content-Disposition value that downloads as `filename`, whatever names it is made of.

    Names come from Kafka: they are data, never a path. Non-ASCII names travel as RFC 6266's
    `filename*=utf-8''...`, which browsers honour where a raw UTF-8 `filename=` is shown
    instead of downloaded.
    """
    return content_disposition_header(True, _NOT_IN_FILENAME.sub("_", filename) or "offsets.json")
