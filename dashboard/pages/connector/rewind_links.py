"""Which applied edit caused a rewind on a partition's chart, so its marker links to it.

A rewind is a commit lower than the one before it. An edit that moves a source back is
applied while the connector is stopped, so the rewind shows at the first commit after the
edit: the edit's apply finished between the commit before the rewind and the rewind itself.
"""

from collections.abc import Sequence
from datetime import datetime


def edit_for_rewind(
    previous_at: datetime | None, rewind_at: datetime, applied: Sequence[tuple[datetime, int]]
) -> int | None:
    """The edit (its id) applied last between the commit before the rewind and the rewind.

    `applied` holds (finished_at, edit id) of the connector's applied edits. None when no
    edit was applied in between: the rewind came from elsewhere (a reset by hand, a bug).
    """
    between = [
        (finished, pk)
        for finished, pk in applied
        if finished <= rewind_at and (previous_at is None or finished >= previous_at)
    ]
    return max(between)[1] if between else None
