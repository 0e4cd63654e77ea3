"""The kinds of edit, one package each, and the registry that picks a kind.

Each kind provides the same steps (`base.EditKind`) and takes its own typed inputs; staging
picks the kind by the input's type (`kind_to_stage`), the apply, review and reconcile flows
by the edit's strategy (`kind_for`). A new kind is one package with an `EditKind` subclass
and its input types, and its `KIND` added to `KINDS` below.
"""

from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.move.kind import KIND as MOVE
from offsets.edits.kinds.offline_file.kind import KIND as OFFLINE_FILE
from offsets.edits.kinds.offset_changes.kind import KIND as OFFSET_CHANGES
from offsets.edits.kinds.removal.kind import KIND as REMOVAL
from offsets.edits.kinds.sink_store.kind import KIND as SINK_STORE
from offsets.models import OffsetEdit

KINDS: tuple[EditKind, ...] = (OFFSET_CHANGES, MOVE, REMOVAL, OFFLINE_FILE, SINK_STORE)

_BY_STRATEGY: dict[str, EditKind] = {
    strategy: kind for kind in KINDS for strategy in kind.strategies
}
_BY_INPUT: dict[type, EditKind] = {input_type: kind for kind in KINDS for input_type in kind.inputs}


def kind_for(edit: OffsetEdit) -> EditKind:
    """Return the kind of `edit`, from its strategy."""
    return _BY_STRATEGY[edit.strategy]


def kind_to_stage(change: object) -> EditKind:
    """Return the kind that stages `change`, from its type (one of a kind's `inputs`)."""
    kind = _BY_INPUT.get(type(change))
    if kind is None:
        raise TypeError(f"No kind of edit stages a {type(change).__name__}.")
    return kind


__all__ = ["KINDS", "Attempt", "EditKind", "kind_for", "kind_to_stage"]
