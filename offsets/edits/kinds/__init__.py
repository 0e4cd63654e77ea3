"""The kinds of edit, one module each, and the registry that picks an edit's kind.

Each kind provides the same steps (`base.EditKind`); the apply, review and reconcile flows
call them through `kind_for(edit)`. A new kind is one module with an `EditKind` subclass,
and its `KIND` added to `KINDS` below.
"""

from offsets.edits.kinds import move, offline_file, offset_changes, removal, sink_store
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.models import OffsetEdit

KINDS: tuple[EditKind, ...] = (
    offset_changes.KIND,
    move.KIND,
    removal.KIND,
    offline_file.KIND,
    sink_store.KIND,
)

_BY_STRATEGY: dict[str, EditKind] = {
    strategy: kind for kind in KINDS for strategy in kind.strategies
}


def kind_for(edit: OffsetEdit) -> EditKind:
    """Return the kind of `edit`, from its strategy."""
    return _BY_STRATEGY[edit.strategy]


__all__ = ["KINDS", "Attempt", "EditKind", "kind_for"]
