"""The rule that judges a restart from the worker's status: running steadily, failed again,
still FAILED after a plain restart, or still restarting at the bound (pure, no I/O)."""

from offsets.domain.restarts import (
    BOUND_SECONDS,
    GRACE_SECONDS,
    SETTLE_SECONDS,
    Part,
    restart_verdict,
)

TRACE = "java.lang.IllegalStateException: cannot open /missing/out.txt\n\tat Sink.start"
RUNNING = (Part("the connector", "RUNNING"), Part("task 0", "RUNNING"))
FAILED = (Part("the connector", "RUNNING"), Part("task 0", "FAILED", TRACE))


def judge(parts, elapsed: float, running_since: float | None = None, tasks=True):
    return restart_verdict(
        parts,
        started=100.0,
        now=100.0 + elapsed,
        running_since=running_since,
        tasks_restarted=tasks,
    )


def test_running_is_final_only_once_it_held_for_the_settle_time():
    first = judge(RUNNING, 0.5)
    assert not first.final and first.running_since == 100.5
    assert first.message.startswith("Restarting: now the connector RUNNING, task 0 RUNNING")
    held = judge(RUNNING, 0.5 + SETTLE_SECONDS, running_since=first.running_since)
    assert held.final and not held.warning
    assert held.message.startswith("Running: the connector RUNNING, task 0 RUNNING, steady")


def test_a_task_failing_again_is_a_final_warning_with_its_first_line():
    verdict = judge(FAILED, GRACE_SECONDS, running_since=100.5)
    assert verdict.final and verdict.warning and verdict.running_since is None
    assert verdict.message == (
        "Failed again: task 0: java.lang.IllegalStateException: cannot open /missing/out.txt "
        "(now the connector RUNNING, task 0 FAILED)."
    )
    assert verdict.failed == (("task 0", TRACE.splitlines()[0], TRACE),)


def test_a_failed_state_read_right_after_the_restart_may_be_the_old_one():
    assert not judge(FAILED, GRACE_SECONDS / 4).final


def test_a_plain_restart_leaves_a_failed_task_failed_and_says_so():
    verdict = judge(FAILED, GRACE_SECONDS, tasks=False)
    assert verdict.final and verdict.warning
    assert verdict.message.startswith("task 0 is still FAILED: only the connector was restarted")


def test_a_restart_that_never_settles_ends_at_the_bound():
    verdict = judge((Part("task 0", "RESTARTING"),), BOUND_SECONDS + 0.4)
    assert verdict.final and verdict.warning
    assert (
        verdict.message == f"Still restarting after {BOUND_SECONDS:.0f} s: now task 0 RESTARTING."
    )
