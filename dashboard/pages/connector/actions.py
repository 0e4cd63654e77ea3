"""Which controls a connector's page offers: only those that make sense in its state now.

A pure rule over the states the last refresh (or the last control) saw. A state the rule does
not know (none yet, UNASSIGNED, RESTARTING) offers every control: the operator knows more.
"""

STOP, PAUSE, RESUME, RESTART = "stop", "pause", "resume", "restart"
ALL = (STOP, PAUSE, RESUME, RESTART)
# Target states its owner set on purpose, and what the worker then reports.
HELD = {"PAUSED", "STOPPED"}


def offered(
    *, target_state: str | None, runtime_state: str | None, deleted: bool
) -> tuple[str, ...]:
    """The controls to offer, in the page's order.

    Stop for a connector that is not already stopped; Pause (its tasks stay assigned) and
    Restart, of the connector or one task, for a running or failed one (a paused or stopped
    one has no tasks worth restarting); Resume only for a paused or stopped one; none for a
    deleted one.
    """
    if deleted:
        return ()
    target, runtime = (target_state or "").upper(), (runtime_state or "").upper()
    if runtime == "STOPPED" or (target == "STOPPED" and runtime in ("", "STOPPED")):
        return (RESUME,)
    if target in HELD or runtime == "PAUSED":
        return (STOP, RESUME)
    if runtime in ("RUNNING", "FAILED"):
        return (STOP, PAUSE, RESTART)
    return ALL
