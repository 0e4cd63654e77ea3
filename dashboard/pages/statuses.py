"""What each lag status and reason means, in one place: the badges' titles and the legend.

A status from the database is data: anything not listed here gets no title, and is escaped
where it is shown (formatting.status_html).
"""

PAUSED = "paused"

# Status or reason -> one sentence for an operator on call; the legend lists them in order.
MEANINGS = {
    "OK": "No lag, or lag the connector is working off.",
    "WARN": "The lag grew at every recent sample although offsets move: it falls behind.",
    "ERR": "At least one partition is STALL, STOP or REWIND (shown beside it): look now.",
    "STALL": "Lag, and the committed offset has not moved over the recent samples "
    "(a source: no commit for several offset flush intervals).",
    "STOP": "Lag, and the connector's tasks are not running, so nothing is committed.",
    "REWIND": "A committed offset went backwards and no applied offset edit wrote it: records "
    "are read again (a restart that lost progress, a reset by hand). A rewind an edit wrote "
    "is no alarm: it shows as that edit (edit #N).",
    "no commit yet": "A sink's partition its group never committed: its lag counts from where "
    "its consumer starts (auto.offset.reset).",
    "not copied yet": "A mirror's upstream partition it has never copied from.",
    PAUSED: "Its owner paused or stopped it (target state PAUSED or STOPPED): its lag stops "
    "by design, not an alarm. Resume it when the pause is over.",
}


# A sink's "last commit": Kafka's OffsetFetch answers offsets, not when they were committed.
SINK_LAST_COMMIT = (
    "When a refresh first saw the group's committed offsets as they are now: Kafka keeps no "
    "commit times, so the commit came after the refresh before it."
)
# A sink whose offsets no refresh saw move: the first read dates nothing but itself.
SINK_FIRST_READ = (
    "No refresh has seen the group's committed offsets move: they are as the dashboard first "
    "read them, at this time. Kafka keeps no commit times, so the last commit happened at or "
    "before it, possibly much earlier."
)


def meaning(status: str) -> str:
    """The sentence for a status or reason ("" for one not listed)."""
    return MEANINGS.get(status, "")
