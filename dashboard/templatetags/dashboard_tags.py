"""Small formatting helpers of the pages: numbers, durations, ages, JSON maps, sort links."""

import json
from datetime import datetime

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

register = template.Library()

DASH = "\u2013"  # en dash


@register.filter
def num(value: int | float | None) -> str:
    """12345 -> 12,345; None -> a dash."""
    if value is None or value == "":
        return DASH
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _duration(seconds: float) -> str:
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


@register.filter
def duration_ms(value: int | None) -> str:
    """A lag in milliseconds as 45s, 12m 05s, 2h 03m or 3d 4h."""
    if value is None:
        return DASH
    return _duration(max(0, value) / 1000)


@register.filter
def seconds(value: float | None) -> str:
    if value is None:
        return DASH
    return f"{value:.1f} s" if value < 60 else _duration(value)


@register.filter
def age(value: datetime | None) -> str:
    """How long ago: 45s, 12m 05s, 2h 03m, 3d 4h."""
    if value is None:
        return DASH
    return _duration(max(0.0, (timezone.now() - value).total_seconds()))


@register.filter
def compact_json(value: object) -> str:
    """A partition or offset map as compact JSON, non-ASCII kept as is."""
    if value is None:
        return "null"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@register.simple_tag
def status_badge(status: str | None, reasons: list[str] | None = None) -> str:
    """The lag status as a coloured badge, then its reasons (STALL, STOP, REWIND) beside it."""
    if status:
        badge = format_html(
            '<span class="status status-{}" data-status="{}">{}</span>',
            status.lower(),
            status,
            status,
        )
    else:
        badge = format_html('<span class="status status-none" data-status="">{}</span>', DASH)
    return badge + format_html_join(
        "",
        ' <span class="status status-{}" data-reason="{}">{}</span>',
        ((reason.lower(), reason, reason) for reason in reasons or ()),
    )


@register.simple_tag(takes_context=True)
def sort_header(
    context: template.Context, key: str, label: str, target: str, numeric: bool = False
) -> str:
    """A column heading that sorts by `key` (again: reversed), keeping the other parameters."""
    current = context.get("sort") or ""
    query: QueryDict = context["request"].GET.copy()
    query.pop("page", None)
    descending = current == key
    query["sort"] = f"-{key}" if descending else key
    url = f"?{query.urlencode()}"
    arrow = " ▲" if current == key else " ▼" if current == f"-{key}" else ""
    sorted_attr = (
        "ascending" if current == key else "descending" if current == f"-{key}" else "none"
    )
    return format_html(
        '<th aria-sort="{}"{}><a href="{}" hx-get="{}" hx-target="#{}" hx-swap="outerHTML" '
        'hx-push-url="true" data-sort="{}">{}{}</a></th>',
        sorted_attr,
        mark_safe(' class="num"') if numeric else "",
        url,
        url,
        target,
        key,
        label,
        arrow,
    )


@register.simple_tag(takes_context=True)
def page_url(context: template.Context, number: int) -> str:
    """The current URL with another page number."""
    query: QueryDict = context["request"].GET.copy()
    query["page"] = str(number)
    return f"?{query.urlencode()}"
