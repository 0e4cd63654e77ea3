"""The rules of pages that follow a cluster as it refreshes: when a running refresh is worth
a banner, and the stable ids that keep keyboard focus across a poll.

Pure functions: the pages and their tests call them; nothing here reads the database.
"""

import hashlib
from datetime import datetime

# A round of a live loop (`refresh_offsets --every 1`) takes about a second. Announcing every
# round made the table jump by the banner's height every few seconds; a refresh still running
# after this long is a slow one, worth saying so.
RUNNING_BANNER_AFTER_SECONDS = 3.0


def shows_running_banner(started_at: datetime | None, now: datetime, *, has_results: bool) -> bool:
    """Whether a running refresh gets its banner: always before the first results (the page
    has nothing else to say), else only once it has run `RUNNING_BANNER_AFTER_SECONDS`."""
    if not has_results or started_at is None:
        return True
    return (now - started_at).total_seconds() >= RUNNING_BANNER_AFTER_SECONDS


def dom_id(name: str) -> str:
    """A stable HTML id for a connector's row links, from any name (Kafka allows characters
    an id selector would not): htmx puts the focus back on the element of the same id after
    a poll replaces the table."""
    return "c-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
