"""Template filters and tags of the pages; the formatting itself is in dashboard.formatting."""

from datetime import datetime

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from dashboard import formatting

register = template.Library()

register.filter("num", formatting.num)
register.filter("duration_ms", formatting.duration_ms)
register.filter("compact_json", formatting.compact_json)


@register.filter
def json_text(value: object) -> str:
    """JSON text as stored (a string) stays as it is; anything else is written compactly."""
    return value if isinstance(value, str) else formatting.compact_json(value)


@register.filter
def seconds(value: float | None) -> str:
    if value is None:
        return formatting.DASH
    return f"{value:.1f} s" if value < 60 else formatting.duration(value)


@register.filter
def age(value: datetime | None) -> str:
    """How long ago: 45s, 12m 05s, 2h 03m, 3d 4h."""
    return formatting.since(value, timezone.now())


@register.simple_tag
def status_badge(status: str | None, reasons: list[str] | None = None) -> str:
    """The lag status as a coloured badge, then its reasons (STALL, STOP, REWIND) beside it."""
    return formatting.status_html(status, reasons or ())


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
