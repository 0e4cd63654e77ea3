"""The planner's rule for ending a partition at its high watermark (planner._end_at_high_watermarks)."""

from confluent_kafka import TopicPartition

from offsets.kafka import planner


class CachedWatermarks:
    """A consumer's cached (low, high) watermarks, as the last fetch response left them."""

    def __init__(self, highs: dict[tuple[str, int], int]) -> None:
        self.highs = highs

    def get_watermark_offsets(self, partition: TopicPartition, cached: bool = False):
        assert cached, "the rule must not ask the broker"
        return (0, self.highs.get((partition.topic, partition.partition), -1001))


def test_a_partition_whose_last_record_reaches_its_high_watermark_ends_after_that_record():
    ends: dict = {}
    planner._end_at_high_watermarks(
        CachedWatermarks({("t", 0): 20, ("t", 1): 11}), {("t", 0): 19, ("t", 1): 14}, ends
    )
    # ("t", 1): a high watermark below the last record (some Kafka-compatible brokers', with multi-record batches).
    assert ends == {("t", 0): 20, ("t", 1): 15}


def test_a_partition_below_its_high_watermark_or_without_one_is_left_to_end_of_partition():
    ends: dict = {}
    planner._end_at_high_watermarks(
        # 2 delivered, high watermark 4: a transaction marker (or an open transaction) follows.
        CachedWatermarks({("t", 0): 4}),
        {("t", 0): 2, ("t", 1): 7},  # ("t", 1): no fetch response yet (-1001)
        ends,
    )
    assert ends == {}


def test_a_partition_already_ended_keeps_its_end():
    ends = {("t", 0): 12}
    planner._end_at_high_watermarks(CachedWatermarks({("t", 0): 20}), {("t", 0): 19}, ends)
    assert ends == {("t", 0): 12}
