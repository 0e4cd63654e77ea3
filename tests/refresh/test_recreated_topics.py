"""Telling a topic deleted and created again since the last refresh (offsets.refresh.plan.recreated_topics)."""

from offsets.refresh.plan import recreated_topics

T = "connect-offsets"
READ = {(T, 0): 360, (T, 1): 178, (T, 2): 0}


def plans(*ends):
    return {T: {p: (0, end) for p, end in enumerate(ends)}}


def test_a_topic_that_only_grew_is_the_same_topic():
    assert recreated_topics(READ, {T: "id-1"}, plans(400, 178, 5), {T: "id-1"}) == {}
    assert recreated_topics(READ, {}, plans(360, 178, 0), {}) == {}  # no IDs either side


def test_a_new_topic_id_tells_even_when_the_new_topic_is_as_long():
    # The second `make demo`: a new broker seeded with the same records.
    found = recreated_topics(READ, {T: "id-1"}, plans(360, 178, 0), {T: "id-2"})
    assert found == {T: "its topic ID changed from id-1 to id-2"}


def test_without_ids_a_partition_that_ends_before_the_last_position_tells():
    found = recreated_topics(READ, {}, plans(360, 3, 0), {})
    assert found == {
        T: "partition 1 ends at offset 3, before offset 178 where the last refresh stopped"
    }
    # The broker gained topic IDs since: the ends still tell.
    assert recreated_topics(READ, {}, plans(360, 3, 0), {T: "id-2"}) == found


def test_without_ids_fewer_partitions_tell():
    found = recreated_topics(READ, {}, plans(360, 178), {})
    assert found == {T: "it has 2 partitions, and partition 2 was read"}


def test_topics_not_read_before_and_topics_gone_are_not_recreated():
    own = "connect-offsets-orders"
    assert (
        recreated_topics(
            READ, {T: "id-1"}, {**plans(360, 178, 0), own: {0: (0, 9)}}, {T: "id-1", own: "x"}
        )
        == {}
    )
    assert recreated_topics(READ, {T: "id-1"}, {}, {}) == {}  # deleted, not created again
