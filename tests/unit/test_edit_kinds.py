"""The registry of edit kinds: every strategy has exactly one kind, each kind every step."""

import pytest

from offsets.edits.kinds import KINDS, EditKind, kind_for
from offsets.models import OffsetEdit

STEPS = ("stage", "lock_checks", "write", "verify", "reconcile")


def test_every_strategy_has_exactly_one_kind():
    handled = [strategy for kind in KINDS for strategy in kind.strategies]
    assert sorted(handled) == sorted(OffsetEdit.Strategy.values)


@pytest.mark.parametrize(
    ("strategy", "name"),
    [
        ("set", "offsets"),
        ("delete-offsets", "offsets"),
        ("import", "offsets"),
        ("move", "move"),
        ("remove", "removal"),
        ("cleanup", "removal"),
    ],
)
def test_an_edit_gets_its_kind_from_its_strategy(strategy, name):
    assert kind_for(OffsetEdit(strategy=strategy)).name == name


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_each_kind_provides_every_step_of_the_contract(kind):
    for step in STEPS:
        assert getattr(type(kind), step) is not getattr(EditKind, step), f"{kind.name}.{step}"
