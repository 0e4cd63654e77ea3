"""Template filters and tags of the pages; the formatting itself is in dashboard.pages.formatting."""

from datetime import datetime
from html import escape
from urllib.parse import quote, urlencode

from django import template
from django.http import QueryDict
from django.utils import timezone
from django.utils.safestring import SafeString

from dashboard.pages import formatting, statuses
from dashboard.pages.clusters import live
from offsets.formats.connector_paths import to_segment

register = template.Library()

register.filter("num", formatting.num)
register.filter("duration_ms", formatting.duration_ms)
register.filter("compact_json", formatting.compact_json)
register.filter("moments_html", formatting.moments_html)
register.filter("name_html", formatting.name_html)
register.filter("name_text", formatting.name_text)
register.filter("status_title", statuses.meaning)
register.filter("dom_id", live.dom_id)


@register.simple_tag
def sink_commit_title(snapshot) -> str:
    """What a sink's last commit time means: a move a refresh saw (statuses.SINK_LAST_COMMIT)
    or only the first read of offsets already there (statuses.SINK_FIRST_READ)."""
    return statuses.SINK_LAST_COMMIT if snapshot.last_commit_seen else statuses.SINK_FIRST_READ


@register.filter
def connector_segment(name: str) -> str:
    """A connector's name as its URL path segment, percent-encoded (any name makes one)."""
    return quote(to_segment(name), safe="~")


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
def running_banner(refresh) -> bool:
    """Whether the page announces its cluster's running refresh (live.shows_running_banner)."""
    if refresh is None or refresh.running is None:
        return False
    return live.shows_running_banner(
        refresh.running.started_at, timezone.now(), has_results=not refresh.never_refreshed
    )


@register.filter
def age_seconds(value: datetime | None) -> int:
    """How many whole seconds ago (0 for none): where live.js counts on from."""
    return 0 if value is None else max(0, int((timezone.now() - value).total_seconds()))


@register.filter
def age(value: datetime | None) -> str:
    """How long ago: 45s, 12m 05s, 2h 03m, 3d 4h."""
    return formatting.since(value, timezone.now())


@register.simple_tag
def age_hole(at: datetime | None) -> str:
    """Where a cached row's age goes: filled in for each request (formatting.AgedHtml)."""
    return formatting.age_hole(at)


@register.simple_tag
def status_badge(status: str | None, reasons: list[str] | None = None, paused: bool = False) -> str:
    """The lag status as a coloured badge, then its reasons (STALL, STOP, REWIND) beside it;
    "paused" for a connector its owner paused."""
    return formatting.status_html(status, reasons or (), paused=paused)


@register.inclusion_tag("dashboard/_status_legend.html")
def status_legend() -> dict:
    """What each status means: the one legend the pages share."""
    return {"meanings": statuses.MEANINGS}


def query_string(parameters: QueryDict, **values: str | None) -> str:
    """`?` and the request's parameters with `values` set (None: left out), in their order.

    What `parameters.copy()`, item assignments and `urlencode()` would give, without the
    copy: it deep-copies the QueryDict, and a table heading asks for ten of these.
    """
    pairs = []
    for name, items in parameters.lists():
        if name not in values:
            pairs.extend((name, item) for item in items)
        elif values[name] is not None:
            pairs.append((name, values[name]))
    pairs.extend((name, value) for name, value in values.items() if name not in parameters)
    return f"?{urlencode([(name, value) for name, value in pairs if value is not None])}"


@register.simple_tag(takes_context=True)
def sort_header(
    context: template.Context, key: str, label: str, target: str, numeric: bool = False
) -> SafeString:
    """A column heading that sorts by `key` (again: reversed), keeping the other parameters."""
    current = context.get("sort") or ""
    descending = current == key
    url = escape(
        query_string(context["request"].GET, page=None, sort=f"-{key}" if descending else key)
    )
    arrow = " ▲" if current == key else " ▼" if current == f"-{key}" else ""
    sorted_attr = (
        "ascending" if current == key else "descending" if current == f"-{key}" else "none"
    )
    numeric_class = ' class="num"' if numeric else ""
    # An f-string: format_html's lazy-aware escaping cost more than the rest of the page head.
    # The id keeps keyboard focus on the heading across the table's polls (htmx refocuses
    # an element of the same id after a swap).
    return SafeString(
        f'<th aria-sort="{sorted_attr}"{numeric_class}><a href="{url}" hx-get="{url}" '
        f'hx-target="#{escape(target)}" hx-swap="outerHTML" hx-push-url="true" '
        f'id="sort-{escape(target)}-{escape(key)}" '
        f'data-sort="{escape(key)}">{escape(label)}{arrow}</a></th>'
    )


@register.simple_tag(takes_context=True)
def order_link(context: template.Context, key: str, label: str, target: str) -> SafeString:
    """A link that orders the table by `key`, or the label in bold when it already is."""
    if (context.get("sort") or "") == key:
        return SafeString(f'<strong aria-current="true">{escape(label)}</strong>')
    url = escape(query_string(context["request"].GET, page=None, sort=key))
    return SafeString(
        f'<a href="{url}" hx-get="{url}" hx-target="#{escape(target)}" hx-swap="outerHTML" '
        f'hx-push-url="true" id="order-{escape(target)}-{escape(key)}" '
        f'data-order="{escape(key)}">{escape(label)}</a>'
    )


@register.simple_tag(takes_context=True)
def page_url(context: template.Context, number: int) -> str:
    """The current URL with another page number."""
    return query_string(context["request"].GET, page=str(number))
