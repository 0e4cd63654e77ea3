"""The files an embedded worker with basic auth is started with (no JVM here: the real worker
accepting them is tests/kafka/test_connect_auth_live.py)."""

import base64

import pytest

from devkit import embedded, embedded_config


def test_java_property_escapes_what_properties_load_would_read_otherwise():
    assert embedded_config.java_property("plain-user_1") == "plain-user_1"
    assert embedded_config.java_property("a=b:c d#e!f\\g") == "a\\=b\\:c\\ d\\#e\\!f\\\\g"
    # Properties.load reads ISO-8859-1: anything else goes as UTF-16 escapes, and so do
    # line breaks, which would end the entry.
    assert embedded_config.java_property("wö\n") == "w\\u00f6\\u000a"
    assert embedded_config.java_property("🔑") == "\\ud83d\\udd11"


def test_the_users_file_has_one_escaped_line_per_user():
    text = embedded_config.basic_auth_users({"dashboard": "s3cret = pass:wörd", "x": "y"})
    assert text == "dashboard=s3cret\\ \\=\\ pass\\:w\\u00f6rd\nx=y\n"


@pytest.mark.parametrize("username", ["", "a:b"])
def test_a_username_the_worker_could_not_read_is_refused(username):
    with pytest.raises(ValueError, match="username"):
        embedded_config.basic_auth_users({username: "password"})


def test_the_jaas_file_names_connects_login_module_and_the_users_file(tmp_path):
    jaas = embedded_config.basic_auth_jaas(tmp_path / 'odd "dir"' / "users.properties")
    assert jaas.startswith(
        "KafkaConnect {\n  " + embedded_config.BASIC_AUTH_LOGIN_MODULE + " required"
    )
    assert f'file="{tmp_path}/odd \\"dir\\"/users.properties";\n}};\n' in jaas


def test_only_a_worker_with_basic_auth_loads_the_extension():
    plain = embedded_config.worker_properties(bootstrap_servers="b:9092", rest_port=8083)
    secured = embedded_config.worker_properties(
        bootstrap_servers="b:9092", rest_port=8083, basic_auth=True
    )
    assert "rest.extension.classes" not in plain
    assert f"rest.extension.classes={embedded_config.BASIC_AUTH_EXTENSION}\n" in secured


def test_the_header_is_standard_basic_auth_in_utf_8():
    header = embedded_config.basic_auth_header("dashboard", "pass:wörd")
    assert header == "Basic " + base64.b64encode("dashboard:pass:wörd".encode()).decode()


@pytest.fixture
def libs_without_the_extension(settings, tmp_path):
    (tmp_path / "libs" / "worker").mkdir(parents=True)
    (tmp_path / "libs" / "worker" / "connect-runtime-4.3.1.jar").write_bytes(b"")
    settings.KAFKA_RUNTIME_LIBS = str(tmp_path / "libs")


def start(tmp_path, users):
    return embedded.EmbeddedKafka(tmp_path / "run").start_worker(
        bootstrap_servers="127.0.0.1:1", group_id="g", topics=embedded_config.WORKER_TOPICS,
        basic_auth=users, timeout=1,
    )  # fmt: skip


def test_a_worker_is_not_started_without_the_extensions_jar(libs_without_the_extension, tmp_path):
    with pytest.raises(embedded.EmbeddedKafkaError, match="make kafka-runtime"):
        start(tmp_path, {"dashboard": "password"})


def test_an_empty_users_file_is_refused_since_it_would_let_everyone_in(
    libs_without_the_extension, tmp_path
):
    with pytest.raises(ValueError, match="at least one user"):
        start(tmp_path, {})
