"""What every htmx page shares: how often its parts poll, and which part a request targets."""

from django.conf import settings
from django.http import HttpRequest


def poll_seconds(refreshing: bool) -> int:
    """How often a page's table polls: faster while a refresh runs, to show its progress."""
    if refreshing:
        return settings.PAGE_POLL_SECONDS_WHILE_REFRESHING
    return settings.PAGE_POLL_SECONDS


def htmx_target(request: HttpRequest) -> str | None:
    """The element an htmx request targets (`HX-Target`), None for a whole page."""
    return request.htmx.target if request.htmx else None
