"""Files an admin points the dashboard at are hostile data: a FIFO, a directory, a device, a
socket or a huge file is refused at once naming the file and what it is, and no refusal
quotes what a file holds (a path may name /proc/self/environ or a secret file)."""

import contextlib
import os
import socket
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from offsets import tuning
from offsets.kafka import files, tls
from offsets.kafka.errors import KafkaUnavailable
from offsets.kafka.secret_files import resolved
from offsets.kafka.standalone_worker import OffsetsFileProblem, read_offsets_file
from offsets.refresh.results import SinkResults
from offsets.refresh.sinks import _store_offsets
from offsets.sink_stores import PLUGIN_FILE, StoreSetting, StoreUnreadable, plugin_file

SECRET_LINE = "SECRET=hunter2\n"
# A line the masking of text from Kafka does not know as a secret: only the reader keeps it out.
UNMASKED_SECRET_LINE = "LOGIN=hunter2\n"


def read_standalone(path: str) -> None:
    read_offsets_file(path)


def read_store(path: str) -> None:
    plugin_file.read(StoreSetting(PLUGIN_FILE, path=path))


def read_setting(path: str) -> None:
    resolved({"sasl.password": f"${{file:{path}}}"})


# Each reader of a file an admin names, and the error it raises.
READERS = {
    "standalone offsets file": (read_standalone, OffsetsFileProblem),
    "sink store file": (read_store, StoreUnreadable),
    "client setting file": (read_setting, KafkaUnavailable),
}
CAPS = {
    "standalone offsets file": "STANDALONE_OFFSETS_FILE_MAX_BYTES",
    "sink store file": "SINK_STORE_FILE_MAX_BYTES",
    "client setting file": "CLIENT_SETTING_FILE_MAX_BYTES",
}
readers = pytest.mark.parametrize(("read", "error"), READERS.values(), ids=READERS.keys())


def refusal(read, path: Path, error: type[Exception]) -> str:
    """The message `read(path)` refuses with, within 5 s: a read that blocks fails the test
    (and is then unblocked by a writer, so the test run goes on)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            read(str(path))
            outcome.append(None)
        except BaseException as exc:  # handed to the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail(f"reading {path} blocked")
    assert isinstance(outcome[0], error), outcome[0]
    return str(outcome[0])


@readers
def test_a_fifo_is_refused_at_once(tmp_path, read, error):
    fifo = tmp_path / "offsets"
    os.mkfifo(fifo)
    message = refusal(read, fifo, error)
    assert str(fifo) in message and "is a FIFO, not a regular file" in message


@readers
def test_a_directory_is_refused(tmp_path, read, error):
    message = refusal(read, tmp_path, error)
    assert str(tmp_path) in message and "is a directory, not a regular file" in message


@readers
def test_a_device_is_refused(read, error):
    message = refusal(read, Path("/dev/null"), error)
    assert "/dev/null" in message and "is a character device, not a regular file" in message


@readers
def test_a_socket_is_refused(read, error):
    # A socket's path holds at most 107 bytes: a short folder, not tmp_path.
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        path = Path(folder) / "s"
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(str(path))
            message = refusal(read, path, error)
    assert str(path) in message and "is a socket, not a regular file" in message


@pytest.mark.parametrize(("name", "cap"), CAPS.items())
def test_a_file_past_its_cap_is_refused_naming_both_sizes(tmp_path, monkeypatch, name, cap):
    monkeypatch.setattr(tuning, cap, 100)
    path = tmp_path / "big"
    path.write_bytes(b"x" * 1000)
    read, error = READERS[name]
    assert "is 1,000 bytes, larger than the 100 bytes the dashboard reads" in refusal(
        read, path, error
    )


@readers
def test_a_missing_file_says_so_without_blocking(tmp_path, read, error):
    if read is read_store:
        assert plugin_file.read(StoreSetting(PLUGIN_FILE, path=str(tmp_path / "gone"))) == {}
        return
    assert "gone" in refusal(read, tmp_path / "gone", error)


@pytest.mark.parametrize(
    ("read", "error"),
    [READERS["standalone offsets file"], READERS["sink store file"]],
    ids=["standalone offsets file", "sink store file"],
)
def test_a_link_to_a_secret_is_refused_without_quoting_it(tmp_path, read, error):
    secret = tmp_path / "environ"
    secret.write_text(SECRET_LINE)
    link = tmp_path / "offsets"
    link.symlink_to(secret)
    message = refusal(read, link, error)
    assert str(link) in message
    assert "hunter2" not in message and "SECRET" not in message
    assert "0x53" not in message  # not even its first byte, "S"


def test_a_store_line_is_refused_by_its_number_and_what_it_should_be(tmp_path):
    path = tmp_path / "files.offsets"
    path.write_text("#head\norders\\:0=5\n" + SECRET_LINE)
    message = refusal(read_store, path, StoreUnreadable)
    assert message == (f"{path}, line 3: expected topic:partition=offset (a Java properties line)")


def test_a_store_file_that_is_not_utf8_is_refused_by_its_line(tmp_path):
    path = tmp_path / "files.offsets"
    path.write_bytes(b"orders\\:0=5\nhunter2\xff\xfe\n")
    message = refusal(read_store, path, StoreUnreadable)
    assert message == f"{path}, line 2 is not UTF-8"


def test_a_setting_file_that_is_not_utf8_names_the_byte_not_its_value(tmp_path):
    path = tmp_path / "password"
    path.write_bytes(b"hunter2\xff")
    message = refusal(read_setting, path, KafkaUnavailable)
    assert message.endswith(f"{path}, which is not UTF-8 (byte 7).")
    assert "0xff" not in message


def test_the_refreshs_store_error_quotes_nothing_of_the_file(tmp_path):
    secret = tmp_path / "environ"
    secret.write_text(UNMASKED_SECRET_LINE)
    link = tmp_path / "files.offsets"
    link.symlink_to(secret)
    results = SinkResults()
    stores = {"files": StoreSetting(PLUGIN_FILE, path=str(link))}
    sink = SimpleNamespace(name="files", sink_group="connect-files")
    _store_offsets([sink], stores, {}, results)
    assert "line 1: expected topic:partition=offset" in results.stores["files"].error
    assert "hunter2" not in results.stores["files"].error


def test_a_link_to_a_regular_file_is_followed(tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"orders\\:0=5\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert files.read_file(str(link), max_bytes=100) == b"orders\\:0=5\n"
    assert plugin_file.read(StoreSetting(PLUGIN_FILE, path=str(link))) == {("orders", 0): 5}


def test_a_file_of_exactly_the_cap_is_read(tmp_path):
    path = tmp_path / "full"
    path.write_bytes(b"x" * 100)
    assert files.read_file(str(path), max_bytes=100) == b"x" * 100
    with pytest.raises(files.FileRefused, match="is 100 bytes, larger than the 99 bytes"):
        files.read_file(str(path), max_bytes=99)


@pytest.mark.parametrize("which", ["ca_file", "cert_file", "key_file"])
def test_a_connect_tls_file_that_is_a_fifo_is_refused_before_openssl_reads_it(tmp_path, which):
    fifo = tmp_path / "worker.pem"
    os.mkfifo(fifo)
    message = refusal(lambda path: tls.context_for(**{which: path}), fifo, files.FileRefused)
    assert message == f"{fifo} is a FIFO, not a regular file"
