"""The stores of a sink's offsets: the plugin's properties file read as `Properties.load`
reads it and written as `Properties.store` writes it, each store named in words, and the
refresh reading each sink from its own store."""

import os

import pytest

from offsets.domain.connectors import suggested_offsets_file
from offsets.refresh.results import SinkResults
from offsets.refresh.sinks import _store_offsets
from offsets.sink_stores import (
    CONNECT_GROUP,
    PLUGIN_FILE,
    READERS,
    REMOTE_GROUP,
    StoreSetting,
    StoreUnreadable,
    plugin_file,
)

# Written by the real runtime: java.util.Properties.store(Writer, null) of three offsets.
JAVA_STORED = (
    "#Fri Nov 27 12:43:52 UTC 2026\nmy_topic-x\\:3=9000000000\norders.v1\\:11=7\norders.v1\\:0=42\n"
)


def test_it_reads_the_file_the_plugin_writes():
    assert plugin_file.parse(JAVA_STORED) == {
        ("my_topic-x", 3): 9_000_000_000,
        ("orders.v1", 11): 7,
        ("orders.v1", 0): 42,
    }


def test_it_reads_what_properties_load_accepts_beyond_what_store_writes():
    text = "! a comment\n  # another\n\norders\\:2 = 5\norders\\:3:6\n"
    assert plugin_file.parse(text) == {("orders", 2): 5, ("orders", 3): 6}


@pytest.mark.parametrize(
    "line",
    ["orders:2=5", "orders\\:x=5", "orders\\:2=five", "\\:2=5", "orders\\:2="],
)
def test_a_line_the_plugin_could_not_read_is_refused_with_its_number(line):
    # "orders:2=5" unescaped is the key "orders" and the value "2=5" to Properties.load.
    with pytest.raises(StoreUnreadable, match=r"offsets\.properties, line 2: expected"):
        plugin_file.parse(f"#head\n{line}\n", name="offsets.properties")


def test_what_it_writes_reads_back_the_same():
    offsets = {("orders.v1", 0): 42, ("orders.v1", 11): 7, ("a_b-c", 3): 0}
    text = plugin_file.render(offsets)
    assert "orders.v1\\:0=42\n" in text
    assert plugin_file.parse(text) == offsets


def test_it_replaces_the_file_whole_and_leaves_nothing_aside(tmp_path):
    path = tmp_path / "offsets.properties"
    path.write_text(JAVA_STORED)
    store = StoreSetting(PLUGIN_FILE, path=str(path))
    plugin_file.write(store, {("orders.v1", 0): 40})
    assert plugin_file.read(store) == {("orders.v1", 0): 40}
    assert os.listdir(tmp_path) == ["offsets.properties"]


def test_a_file_not_there_yet_holds_no_offsets(tmp_path):
    assert plugin_file.read(StoreSetting(PLUGIN_FILE, path=str(tmp_path / "none"))) == {}


def test_a_file_it_cannot_read_says_which(tmp_path):
    path = tmp_path / "offsets.properties"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(StoreUnreadable, match=r"offsets\.properties, line 1 is not UTF-8"):
        plugin_file.read(StoreSetting(PLUGIN_FILE, path=str(path)))


def test_every_store_is_named_and_has_a_reader():
    assert set(READERS) == {CONNECT_GROUP, REMOTE_GROUP, PLUGIN_FILE}
    assert StoreSetting(PLUGIN_FILE, path="/data/o.properties").where() == (
        "offsets file /data/o.properties"
    )
    remote = StoreSetting(REMOTE_GROUP, group_id="mm2-sink", cluster="target")
    assert remote.where() == "group mm2-sink on cluster target"
    assert StoreSetting(CONNECT_GROUP, group_id="connect-x").where() == ""


def test_the_plugins_class_suggests_its_own_file_and_no_other_does():
    plugin = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"
    config = {"connector.class": plugin, "offsets.file": " /data/o.properties "}
    assert suggested_offsets_file(config) == "/data/o.properties"
    assert suggested_offsets_file({"connector.class": plugin}) is None
    other = {"connector.class": "FileStreamSink", "offsets.file": "/data/o.properties"}
    assert suggested_offsets_file(other) is None


class Sink:
    """The two facts of a sink connector that reading its store needs."""

    def __init__(self, name: str) -> None:
        self.name, self.sink_group = name, f"connect-{name}"


def test_the_refresh_reads_each_sink_from_its_store_and_says_why_one_could_not_be(tmp_path):
    good, bad = tmp_path / "good.offsets", tmp_path / "bad.offsets"
    good.write_text("orders\\:0=7\n")
    bad.write_text("orders:0=7\n")
    sinks = [Sink("in-group"), Sink("in-file"), Sink("broken")]
    stores = {
        "in-file": StoreSetting(PLUGIN_FILE, path=str(good)),
        "broken": StoreSetting(PLUGIN_FILE, path=str(bad)),
    }
    results = SinkResults()
    measured, committed = _store_offsets(
        sinks, stores, {"connect-in-group": {("orders", 0): 3}}, results
    )
    assert [sink.name for sink in measured] == ["in-group", "in-file"]
    assert committed == {"in-group": {("orders", 0): 3}, "in-file": {("orders", 0): 7}}
    assert results.stores["in-file"].where == f"offsets file {good}"
    assert results.stores["in-file"].error == ""
    assert "line 1: expected topic:partition=offset" in results.stores["broken"].error
    assert "in-group" not in results.stores
