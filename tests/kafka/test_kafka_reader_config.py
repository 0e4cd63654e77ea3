from offsets import tuning
from offsets.kafka import reading

# A cluster's own bulk-read tuning, as an operator may set it (add_cluster --client-config).
BULK_TUNING = {"fetch.min.bytes": "4000000", "fetch.wait.max.ms": "100"}


def test_a_reader_polls_briefly_at_the_end_of_data_by_default():
    config = reading.reader_config({"bootstrap.servers": "k:9092"}, "t")
    assert config["fetch.wait.max.ms"] == tuning.READER_SETTINGS["fetch.wait.max.ms"]
    assert config["bootstrap.servers"] == "k:9092"
    assert config["isolation.level"] == "read_committed"


def test_a_clusters_own_settings_tune_the_fetches():
    config = reading.reader_config({"bootstrap.servers": "k:9092", **BULK_TUNING}, "t")
    assert {key: config[key] for key in BULK_TUNING} == BULK_TUNING


def test_a_clusters_settings_cannot_make_a_reader_commit_or_skip_to_the_end():
    config = reading.reader_config(
        {
            "bootstrap.servers": "k:9092",
            "enable.auto.commit": True,
            "auto.offset.reset": "latest",
            "isolation.level": "read_uncommitted",
        },
        "planner",
    )
    assert config["enable.auto.commit"] is False
    assert config["auto.offset.reset"] == "earliest"
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"].startswith("offsets-dashboard-planner-")


def test_small_topics_are_read_without_the_clusters_bulk_fetch_tuning():
    # A minimum of megabytes would hold every fetch of the config and status topics for its
    # whole wait.
    settings = {"bootstrap.servers": "k:9092", **BULK_TUNING, "sasl.username": "u"}
    small = tuning.short_read_settings(settings)
    assert small["fetch.min.bytes"] == 1
    assert small["fetch.wait.max.ms"] == tuning.READER_WAIT_MS
    assert small["sasl.username"] == "u" and small["bootstrap.servers"] == "k:9092"
    assert settings["fetch.min.bytes"] == "4000000"  # the cluster's settings are not changed
    # A shorter wait than the readers' own is the cluster's choice and is kept.
    assert tuning.short_read_settings({"fetch.wait.max.ms": "5"})["fetch.wait.max.ms"] == 5
    assert tuning.short_read_settings({})["fetch.wait.max.ms"] == tuning.READER_WAIT_MS


def test_a_short_read_may_wait_longer_than_the_readers_but_not_than_the_cluster_asks():
    # The planner's wait (tuning.PLANNER_WAIT_MS): a cluster's 100 ms is cut to it,
    # librdkafka's default (500 ms, no setting) too, and a shorter one is the cluster's choice.
    tuned_settings = {"bootstrap.servers": "k:9092", **BULK_TUNING}
    assert tuning.short_read_settings(tuned_settings, wait_ms=50)["fetch.wait.max.ms"] == 50
    assert tuning.short_read_settings({}, wait_ms=50)["fetch.wait.max.ms"] == 50
    assert tuning.short_read_settings({"fetch.wait.max.ms": "30"}, wait_ms=50) == {
        "fetch.wait.max.ms": 30,
        "fetch.min.bytes": 1,
    }


def test_offset_rounds_ask_each_partition_once_per_round_lowest_offsets_first():
    wanted = {(("a", 0), 9), (("a", 0), 4), (("a", 1), 7), (("b", 0), 2), (("a", 0), 6)}
    assert reading.offset_rounds(wanted) == [
        {("a", 0): 4, ("a", 1): 7, ("b", 0): 2},
        {("a", 0): 6},
        {("a", 0): 9},
    ]
    # The same pair twice is read once; nothing asked, no round.
    assert reading.offset_rounds([(("a", 0), 3), (("a", 0), 3)]) == [{("a", 0): 3}]
    assert reading.offset_rounds([]) == []
