"""The kinds of edit, one module each, and the registry that picks an edit's kind.

Each kind provides the same steps (`base.EditKind`); the apply, review and reconcile flows
call them through `kind_for(edit)`. A new kind is one module with an `EditKind` subclass,
and its `KIND` added to `KINDS` below.
"""

from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.move.kind import KIND as MOVE
from offsets.edits.kinds.offline_file.kind import KIND as OFFLINE_FILE
from offsets.edits.kinds.offset_changes.kind import KIND as OFFSET_CHANGES
from offsets.edits.kinds.removal.kind import KIND as REMOVAL
from offsets.edits.kinds.sink_store.kind import KIND as SINK_STORE
from offsets.models import OffsetEdit

KINDS: tuple[EditKind, ...] = (
    OFFSET_CHANGES,
    MOVE,
    REMOVAL,
    OFFLINE_FILE,
    SINK_STORE,
)

_BY_STRATEGY: dict[str, EditKind] = {
    strategy: kind for kind in KINDS for strategy in kind.strategies
}


def kind_for(edit: OffsetEdit) -> EditKind:
    """Return the kind of `edit`, from its strategy."""
    return _BY_STRATEGY[edit.strategy]


__all__ = ["KINDS", "Attempt", "EditKind", "kind_for"]
