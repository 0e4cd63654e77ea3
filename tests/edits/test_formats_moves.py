"""Pure rules of moving a connector between Connect clusters (offsets/formats/moves.py)."""

import pytest

from offsets.domain.masking import MASK
from offsets.edits.kinds.move.rules import (
    MoveRuleError,
    TargetFacts,
    answered_entries,
    compare_offsets,
    config_for_move,
    kept_references,
    move_warnings,
    offsets_map,
    secret_keys,
    sink_entry,
    source_entry,
    target_problems,
)

CONFIG = {
    "connector.class": "io.example.JdbcSourceConnector",
    "connection.url": "jdbc:postgresql://db:5432/shop",
    "connection.password": "hunter2",
    "connection.user": "shop",
    "aws.secret.key": "${file:/etc/secrets.properties:aws.secret}",
    "webhook": "https://user:pa55@hooks.example/x",
    "empty.password": "",
}


def test_secret_keys_are_what_masking_hides_whole_or_in_part():
    assert secret_keys(CONFIG) == ["connection.password", "webhook"]
    assert kept_references(CONFIG) == ["aws.secret.key"]


def test_the_config_takes_the_supplied_secrets_and_keeps_references():
    config = config_for_move(CONFIG, {"connection.password": "pw2", "webhook": "https://h/x"})
    assert config["connection.password"] == "pw2"
    assert config["webhook"] == "https://h/x"
    assert config["aws.secret.key"] == "${file:/etc/secrets.properties:aws.secret}"
    assert config["connection.url"] == CONFIG["connection.url"]
    assert MASK not in config.values()


def test_a_missing_secret_is_refused_naming_the_keys():
    with pytest.raises(MoveRuleError, match=r"connection\.password, webhook"):
        config_for_move(CONFIG, {"connection.password": ""})


def test_a_supplied_key_that_is_no_secret_is_refused():
    supplied = {"connection.password": "p", "webhook": "w", "conection.pasword": "typo"}
    with pytest.raises(
        MoveRuleError, match=r"Not a masked secret of this connector's config: conection\.pasword"
    ):
        config_for_move(CONFIG, supplied)


def facts(**changes) -> TargetFacts:
    base = {
        "source_cluster": "a",
        "target_cluster": "b",
        "connector": "orders",
        "connector_class": "io.example.JdbcSourceConnector",
        "has_worker_url": True,
        "worker_version": "3.7.0",
        "create_stopped": True,
        "name_exists": False,
        "plugin_classes": frozenset({"io.example.JdbcSourceConnector"}),
    }
    return TargetFacts(**{**base, **changes})


def test_a_fit_target_has_no_problems():
    assert target_problems(facts()) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"target_cluster": "a"}, "is the connector's own cluster"),
        ({"has_worker_url": False}, "has no Connect worker URL"),
        ({"create_stopped": False, "worker_version": "3.6.1"}, "version 3.6.1) cannot create"),
        ({"name_exists": True}, "already has a connector named 'orders'"),
        ({"plugin_classes": frozenset({"x.Other"})}, "has no plugin io.example.Jdbc"),
        ({"connector_class": ""}, "has no connector.class"),
    ],
)
def test_each_unfit_target_is_refused_with_its_reason(changes, expected):
    problems = target_problems(facts(**changes))
    assert len(problems) == 1 and expected in problems[0]


def test_the_patch_entries_are_kip_875_shaped():
    assert source_entry({"filename": "/f"}, {"position": 8}) == {
        "partition": {"filename": "/f"},
        "offset": {"position": 8},
    }
    assert sink_entry("t", 2, 41) == {
        "partition": {"kafka_topic": "t", "kafka_partition": 2},
        "offset": {"kafka_offset": 41},
    }
    assert sink_entry("t", 2, None)["offset"] is None


def test_the_verification_ignores_order_and_key_order():
    written = [source_entry({"a": 1, "b": "x"}, {"p": 1}), source_entry({"a": 2}, {"p": 2})]
    answer = {"offsets": [{"partition": {"a": 2}, "offset": {"p": 2}}, written[0] | {}]}
    answer["offsets"][1] = {"partition": {"b": "x", "a": 1}, "offset": {"p": 1}}
    assert compare_offsets(written, answer) is None


def test_the_verification_names_missing_different_and_unexpected_partitions():
    written = [sink_entry("t", 0, 5), sink_entry("t", 1, 6), sink_entry("t", 3, None)]
    answer = {
        "offsets": [
            {
                "partition": {"kafka_topic": "t", "kafka_partition": 0},
                "offset": {"kafka_offset": 4},
            },
            {
                "partition": {"kafka_topic": "t", "kafka_partition": 2},
                "offset": {"kafka_offset": 1},
            },
        ]
    }
    problem = compare_offsets(written, answer)
    assert "1 missing" in problem and "1 different" in problem and "1 unexpected" in problem
    # A deleted (None) offset must be absent, and is.
    assert '"kafka_partition": 3' not in problem


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"offsets": "x"},
        {"offsets": [{"offset": {}}]},
        {"offsets": [{"partition": {}, "offset": 3}]},
    ],
)
def test_a_malformed_answer_is_a_rule_error_not_a_crash(body):
    with pytest.raises(MoveRuleError):
        compare_offsets([sink_entry("t", 0, 1)], body)


def test_offsets_map_keys_are_canonical():
    assert offsets_map([{"partition": {"b": 1, "a": 2}, "offset": None}], "x") == {
        '{"a": 2, "b": 1}': "null"
    }


def warnings_of(**changes) -> list[str]:
    base = {
        "source": "a",
        "target": "b",
        "is_source": False,
        "target_state": "STOPPED",
        "group_id": "connect-s",
        "same_kafka": True,
    }
    return move_warnings(**{**base, **changes})


def test_the_warnings_say_what_a_reviewer_must_know():
    # A stopped source: only where it goes and what to do after.
    assert len(warnings_of(is_source=True, same_kafka=False)) == 1
    assert "is RUNNING: stop it" in warnings_of(target_state="RUNNING")[1]
    assert "same group on b" in warnings_of()[-1]
    assert "another Kafka cluster" in warnings_of(same_kafka=False)[-1]


@pytest.mark.parametrize(
    "call",
    [
        lambda: answered_entries({"offsets": "jdbc:postgresql://app:hunter2@db/shop"}),
        lambda: offsets_map([{"partition": "password=hunter2"}], "The target"),
        lambda: offsets_map([{"partition": {}, "offset": "token=hunter2"}], "The target"),
    ],
)
def test_a_malformed_worker_answer_is_quoted_masked(call):
    with pytest.raises(MoveRuleError) as error:
        call()
    assert "hunter2" not in str(error.value) and MASK in str(error.value)
