"""What every kind of edit provides (EditKind) and what one apply carries (Attempt).

The flows are written once: `workflow.stage` hands a kind its typed input; `apply.apply_edit`
claims the edit, then calls the kind's `prepare`, `lock_checks`, `write` and `verify` in that
order; `reconcile.reconcile` calls its `reconcile`; the edit page shows what `describe`
returns. A step ends an apply through `audit.finish`, `release` or `fail`.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from offsets.domain.edits import CheckResult
from offsets.edits.errors import ConnectorNotFound
from offsets.edits.kinds.removal.rules import Steps
from offsets.kafka.connect_rest import ConnectRest, WorkerInfo
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import OffsetEdit

logger = logging.getLogger(__name__)


@dataclass
class Attempt:
    """One apply of a claimed edit, carried from one step of its kind to the next."""

    edit: OffsetEdit
    user: object
    # Passed to the transactional writer (tests use it to fail at the worst moment).
    before_commit: Callable[[], None] | None = None
    # The lock check's results once it passed (each as a dict, as stored on the edit).
    checks: list[dict] = field(default_factory=list)
    # What was done so far, for a kind whose apply takes several steps (a removal).
    steps: Steps = field(default_factory=Steps)
    # The Connect worker a kind talks to, once it has asked it.
    rest: ConnectRest | None = None
    worker: WorkerInfo | None = None


class EditKind:
    """The steps of one kind of edit. Subclass it, then register it in `kinds/__init__.py`.

    A step that settles the edit itself (gives the claim back, fails it, rolls it back)
    returns None (or False): the flow then stops and returns the edit as that step left it.
    """

    name: str = ""
    # The OffsetEdit strategies this kind handles (each strategy has exactly one kind).
    strategies: tuple[str, ...] = ()
    # The typed inputs `stage` takes (frozen dataclasses; each input has exactly one kind).
    inputs: tuple[type, ...] = ()
    # How a refused lock check names the apply: "The lock check refused the <what>: ...".
    what = "apply"

    def stage(self, *, cluster, connector: str, user, change, comment: str = "") -> OffsetEdit:
        """Read what `change` (one of `inputs`) touches now and save a draft (`drafts.save`)."""
        raise NotImplementedError

    def restage_change(self, edit: OffsetEdit):
        """The input that stages `edit` again (one of `inputs`); None when it cannot be.

        "Re-stage with the same inputs" stages it: the diff is computed again against the
        offsets read now, and the new draft needs its own approval.
        """
        return None

    def prepare(self, attempt: Attempt) -> bool:
        """Do what must come before the lock check; False once it settled the edit."""
        return True

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """The kind's checks, read live, in order (the flow adds `single-apply` last)."""
        raise NotImplementedError

    def unreadable(self, attempt: Attempt, exc: Exception) -> str | None:
        """Why the claim goes back when the lock check raised `exc`; None lets it propagate."""
        if isinstance(exc, KafkaUnavailable | ConnectorNotFound):
            return f"The lock check could not read the cluster: {exc}"
        # Nothing has been written yet: give the claim back rather than strand the edit.
        logger.error("Lock check of edit %s failed", attempt.edit.pk, exc_info=exc)
        return f"The lock check failed unexpectedly: {exc}"

    def settle_options(self, attempt: Attempt) -> dict:
        """Keyword arguments of `audit.settle_checks` beyond the results."""
        return {"what": self.what}

    def write(self, attempt: Attempt) -> dict | None:
        """Write the edit; return what was written (for the audit log), or None once settled."""
        raise NotImplementedError

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """Read the write back and finish the edit applied or failed."""
        raise NotImplementedError

    def unexpected(self, attempt: Attempt, exc: Exception) -> OffsetEdit | None:
        """Settle an apply a bug interrupted; None leaves it "applying" for reconciliation."""
        return None

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Settle an edit left "applying" from what the cluster holds now.

        Raises KafkaUnavailable (or ConnectorNotFound) when it cannot be read: the edit then
        stays "applying".
        """
        raise NotImplementedError

    def describe(self, edit: OffsetEdit) -> dict:
        """What the edit's page shows for this kind, as template variables (read cheaply:
        the page's status panel is rendered again after every action)."""
        return {}

    def route_ahead(self, edit: OffsetEdit):
        """How the edit would be written if applied now, for its page (None: not asked)."""
        return None
