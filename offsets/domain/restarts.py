"""After a restart: whether the connector settled running, failed again, or is still restarting.

A pure rule over the worker's status read now, the time of the restart and since when
everything was seen RUNNING; the caller reads the status again (a page polls, the API waits)
until the verdict is final.
"""

from dataclasses import dataclass

from offsets.formats.status_records import trace_summary

# RUNNING must hold this long: a task that fails at start is RUNNING for a moment first.
SETTLE_SECONDS = 5.0
# Following a restart stops here with "still restarting".
BOUND_SECONDS = 20.0
# A FAILED read this soon after the restart may be the state from before it: the worker
# records RESTARTING a moment after it answers the restart.
GRACE_SECONDS = 2.0


@dataclass(frozen=True)
class Part:
    """The connector or one task: its name ("the connector", "task 0"), state and trace."""

    name: str
    state: str
    trace: str = ""


@dataclass(frozen=True)
class Verdict:
    final: bool
    warning: bool
    message: str
    # Since when every part is RUNNING (the caller passes it back at the next read).
    running_since: float | None
    # What FAILED: (name, the trace's first line, the trace).
    failed: tuple[tuple[str, str, str], ...] = ()


def restart_verdict(
    parts: tuple[Part, ...],
    *,
    started: float,
    now: float,
    running_since: float | None,
    tasks_restarted: bool,
) -> Verdict:
    """Judge the status read at `now` of a restart sent at `started`.

    `parts` are what the restart touched (the connector and its tasks, or the one task
    restarted). `tasks_restarted` says whether tasks were restarted at all: a plain restart
    leaves a FAILED task FAILED, which is no "failed again".
    """
    elapsed = max(0.0, now - started)
    states = ", ".join(f"{part.name} {part.state}" for part in parts) or "no tasks"
    failed = tuple(
        (part.name, trace_summary(part.trace) or "no trace", part.trace)
        for part in parts
        if part.state == "FAILED"
    )
    if failed and elapsed >= GRACE_SECONDS:
        name, line, _ = failed[0]
        others = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        if tasks_restarted or name == "the connector":
            message = f"Failed again: {name}{others}: {line} (now {states})."
        else:
            message = (
                f"{name} is still FAILED{others}: only the connector was restarted (tick "
                f'"restart its tasks too"): {line} (now {states}).'
            )
        return Verdict(True, True, message, None, failed)
    running = bool(parts) and all(part.state == "RUNNING" for part in parts) and not failed
    since = (running_since if running_since is not None else now) if running else None
    if since is not None and now - since >= SETTLE_SECONDS:
        message = f"Running: {states}, steady for {SETTLE_SECONDS:g} s after the restart."
        return Verdict(True, False, message, since)
    if elapsed >= BOUND_SECONDS:
        message = f"Still restarting after {elapsed:.0f} s: now {states}."
        return Verdict(True, True, message, since)
    message = (
        f"Restarting: now {states}; following it until it settles (up to {BOUND_SECONDS:g} s)."
    )
    return Verdict(False, False, message, since)
