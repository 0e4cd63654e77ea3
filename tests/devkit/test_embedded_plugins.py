"""The plugin folders an embedded worker loads through plugin.path (no JVM here: the real
worker loading Debezium is tests/refresh/test_debezium_position_age.py)."""

import pytest

from devkit import embedded, embedded_config


def test_only_a_worker_given_plugin_folders_sets_plugin_path():
    plain = embedded_config.worker_properties(bootstrap_servers="b:9092", rest_port=8083)
    with_plugins = embedded_config.worker_properties(
        bootstrap_servers="b:9092", rest_port=8083, plugin_path="/opt/plugins"
    )
    # The worker refuses an empty plugin.path: a worker without plugins has none at all.
    assert "plugin.path" not in plain
    assert "plugin.path=/opt/plugins\n" in with_plugins
    assert "plugin.discovery=service_load\n" in with_plugins


@pytest.mark.parametrize("layout", ["missing", "empty", "a-plugin-folder-without-jars"])
def test_a_worker_is_not_started_without_a_plugin_in_its_folder(tmp_path, layout):
    plugins = tmp_path / "plugins"
    if layout != "missing":
        plugins.mkdir()
    if layout == "a-plugin-folder-without-jars":
        (plugins / "debezium-postgres").mkdir()
        (plugins / "debezium-postgres" / ".built").write_bytes(b"")
    with pytest.raises(embedded.EmbeddedKafkaError, match="make kafka-plugins"):
        embedded.EmbeddedKafka(tmp_path / "run").start_worker(
            bootstrap_servers="127.0.0.1:1",
            group_id="g",
            topics=embedded_config.WORKER_TOPICS,
            plugins=plugins,
            timeout=1,
        )


@pytest.mark.parametrize("jar", ["debezium-postgres/debezium-api.jar", "uber-plugin.jar"])
def test_the_plugin_path_is_the_folder_holding_plugins(tmp_path, jar):
    # Connect takes each folder of jars in it as a plugin, and each jar directly in it too.
    (tmp_path / "plugins" / jar).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "plugins" / jar).write_bytes(b"")
    assert embedded._plugin_path(tmp_path / "plugins") == str((tmp_path / "plugins").resolve())
