"""The registry of edit kinds: every strategy has exactly one kind, each kind every step."""

from datetime import UTC, datetime, timedelta

import pytest

from offsets.edits.kinds import KINDS, EditKind, kind_for
from offsets.edits.kinds.offset_changes.diff import StageRequest
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


def test_each_kind_knows_the_inputs_that_stage_an_edit_again():
    removal = OffsetEdit(strategy="cleanup", parameters={"topics": ["t"], "tombstones": 3})
    assert kind_for(removal).restage_inputs(removal) == {"strategy": "cleanup"}
    sink = OffsetEdit(strategy="offset", parameters={"value": 3, "partitions": ["a-b-2"]})
    assert kind_for(sink).restage_inputs(sink) == {
        "request": StageRequest(strategy="offset", value=3, partitions=(("a-b", 2),))
    }
    # A move's secrets are typed again by whoever stages it: not re-staged as it is.
    move = OffsetEdit(strategy="move")
    assert kind_for(move).restage_inputs(move) is None
