"""The registry of edit kinds: every strategy and every input has exactly one kind, each kind
every step, and each kind's package is registered."""

import dataclasses
import importlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from offsets.edits import kinds
from offsets.edits.kinds import KINDS, EditKind, kind_for, kind_to_stage
from offsets.edits.workflow import (
    Cleanup,
    CommitBack,
    Move,
    OfflineChange,
    OffsetChange,
    Removal,
    StageRequest,
    StoreChange,
)
from offsets.models import Cluster, OffsetEdit

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


# One of each input a kind takes.
CHANGES = [
    OffsetChange(StageRequest(strategy="set")),
    CommitBack(OffsetEdit(strategy="offset")),
    StoreChange(StageRequest(strategy="shift", value=-5)),
    OfflineChange(StageRequest(strategy="set")),
    Move(Cluster(name="target"), {"password": "x"}),
    Removal(),
    Cleanup(),
]


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: type(change).__name__)
def test_each_input_is_staged_by_the_one_kind_that_takes_it(change):
    [kind] = [kind for kind in KINDS if type(change) in kind.inputs]
    assert kind_to_stage(change) is kind
    assert dataclasses.is_dataclass(change) and type(change).__dataclass_params__.frozen


def test_every_kind_takes_an_input():
    taken = [input_type for kind in KINDS for input_type in kind.inputs]
    assert all(kind.inputs for kind in KINDS)
    assert sorted(t.__name__ for t in taken) == sorted(type(c).__name__ for c in CHANGES)


def test_an_input_no_kind_takes_is_refused():
    with pytest.raises(TypeError, match="No kind of edit stages a StageRequest"):
        kind_to_stage(StageRequest(strategy="set"))


def test_every_kind_package_is_registered():
    folder = Path(kinds.__file__).parent
    packages = sorted(path.parent.name for path in folder.glob("*/kind.py"))
    registered = [
        importlib.import_module(f"offsets.edits.kinds.{name}.kind").KIND for name in packages
    ]
    assert sorted(kind.name for kind in registered) == sorted(kind.name for kind in KINDS)


@pytest.mark.parametrize(
    "request_",
    [
        StageRequest(strategy="set", partition={"filename": "a"}, offset={"position": 7}),
        StageRequest(strategy="restore", at=datetime(2026, 11, 27, 9, 30, tzinfo=UTC)),
        StageRequest(strategy="duration", duration=timedelta(minutes=90)),
        StageRequest(strategy="shift", value=-5, partitions=(("or-ders", 0), ("x", 12))),
        StageRequest(strategy="copy-group", group="other"),
        StageRequest(strategy="latest"),
    ],
    ids=lambda request: request.strategy,
)
def test_a_request_is_rebuilt_from_the_inputs_it_stored(request_):
    assert StageRequest.from_parameters(request_.strategy, request_.parameters()) == request_


def test_each_kind_knows_the_input_that_stages_an_edit_again():
    removal = OffsetEdit(strategy="cleanup", parameters={"topics": ["t"], "tombstones": 3})
    assert kind_for(removal).restage_change(removal) == Cleanup()
    sink = OffsetEdit(strategy="offset", parameters={"value": 3, "partitions": ["a-b-2"]})
    assert kind_for(sink).restage_change(sink) == OffsetChange(
        StageRequest(strategy="offset", value=3, partitions=(("a-b", 2),))
    )
    # A move's secrets are typed again by whoever stages it: not re-staged as it is.
    move = OffsetEdit(strategy="move")
    assert kind_for(move).restage_change(move) is None
