from offsets.kafka import client, embedded


def test_a_reader_polls_briefly_at_the_end_of_data_by_default():
    config = client.reader_config({"bootstrap.servers": "k:9092"}, "t")
    assert config["fetch.wait.max.ms"] == client.READER_SETTINGS["fetch.wait.max.ms"]
    assert config["bootstrap.servers"] == "k:9092"
    assert config["isolation.level"] == "read_committed"


def test_a_clusters_own_settings_tune_the_fetches():
    config = client.reader_config({"bootstrap.servers": "k:9092", **embedded.CLIENT_CONFIG}, "t")
    assert {key: config[key] for key in embedded.CLIENT_CONFIG} == embedded.CLIENT_CONFIG


def test_a_clusters_settings_cannot_make_a_reader_commit_or_skip_to_the_end():
    config = client.reader_config(
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
    # The embedded broker's minimum of megabytes held every fetch of the config and status
    # topics for its whole wait.
    settings = {"bootstrap.servers": "k:9092", **embedded.CLIENT_CONFIG, "sasl.username": "u"}
    small = client.short_read_settings(settings)
    assert small["fetch.min.bytes"] == 1
    assert small["fetch.wait.max.ms"] == client.READER_WAIT_MS
    assert small["sasl.username"] == "u" and small["bootstrap.servers"] == "k:9092"
    assert settings["fetch.min.bytes"] == "4000000"  # the cluster's settings are not changed
    # A shorter wait than the readers' own is the cluster's choice and is kept.
    assert client.short_read_settings({"fetch.wait.max.ms": "5"})["fetch.wait.max.ms"] == 5
    assert client.short_read_settings({})["fetch.wait.max.ms"] == client.READER_WAIT_MS


def test_a_short_read_may_wait_longer_than_the_readers_but_not_than_the_cluster_asks():
    # The planner's wait (client.PLANNER_WAIT_MS): the embedded broker's 100 ms is cut to it,
    # librdkafka's default (500 ms, no setting) too, and a shorter one is the cluster's choice.
    embedded_settings = {"bootstrap.servers": "k:9092", **embedded.CLIENT_CONFIG}
    assert client.short_read_settings(embedded_settings, wait_ms=50)["fetch.wait.max.ms"] == 50
    assert client.short_read_settings({}, wait_ms=50)["fetch.wait.max.ms"] == 50
    assert client.short_read_settings({"fetch.wait.max.ms": "30"}, wait_ms=50) == {
        "fetch.wait.max.ms": 30,
        "fetch.min.bytes": 1,
    }


def test_offset_rounds_ask_each_partition_once_per_round_lowest_offsets_first():
    wanted = {(("a", 0), 9), (("a", 0), 4), (("a", 1), 7), (("b", 0), 2), (("a", 0), 6)}
    assert client.offset_rounds(wanted) == [
        {("a", 0): 4, ("a", 1): 7, ("b", 0): 2},
        {("a", 0): 6},
        {("a", 0): 9},
    ]
    # The same pair twice is read once; nothing asked, no round.
    assert client.offset_rounds([(("a", 0), 3), (("a", 0), 3)]) == [{("a", 0): 3}]
    assert client.offset_rounds([]) == []
