"""How stale a cluster's results are, judged against the cluster's own refresh period.

Pure rules: the pages and the API ask `RefreshState.staleness`, which feeds them what the
database says. A cluster refreshed every second is late after seconds, one refreshed daily
only after days; a cluster refreshed by hand (period 0) has no period to be judged against,
so the global SNAPSHOT_STALE_SECONDS decides, as it always has.
"""

FRESH = "fresh"
LATE = "late"  # amber: a round or two went missing
STALE = "stale"  # red: as late as /readyz calls a cluster not refreshed in time
LEVELS = (FRESH, LATE, STALE)

# Results older than this many expected gaps are late (amber).
LATE_AFTER_GAPS = 2


def expected_gap_seconds(*, every_seconds: int, run_seconds: float | None) -> float:
    """The longest gap expected between two results of a scheduled cluster.

    The scheduler starts a round one period after the last one started, or as soon as the last
    one ends when it took longer; that round then takes about as long as the last one did. So
    a cluster refreshed every second whose refresh takes 4 s has a result every ~5 s, not
    every second, and is not late for it.
    """
    return every_seconds + max(0.0, run_seconds or 0.0)


def staleness(
    age_seconds: float | None,
    *,
    every_seconds: int,
    run_seconds: float | None,
    stale_seconds: int,
    stale_gaps: float,
) -> str:
    """FRESH, LATE or STALE for results `age_seconds` old (None: there are none to judge).

    Scheduled (`every_seconds` > 0): LATE past LATE_AFTER_GAPS expected gaps, STALE past
    `stale_gaps` of them (READY_REFRESH_PERIODS, as /readyz counts). By hand: STALE past
    `stale_seconds` (SNAPSHOT_STALE_SECONDS), never LATE: nobody promised a sooner refresh.
    """
    if age_seconds is None:
        return FRESH
    if every_seconds <= 0:
        return STALE if age_seconds > stale_seconds else FRESH
    gap = expected_gap_seconds(every_seconds=every_seconds, run_seconds=run_seconds)
    if age_seconds > stale_gaps * gap:
        return STALE
    if age_seconds > LATE_AFTER_GAPS * gap:
        return LATE
    return FRESH
