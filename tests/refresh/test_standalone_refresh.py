"""A standalone worker's refresh: its offsets file read where the dashboard runs.

No broker and no worker here (the cluster has neither a Kafka cluster nor a REST URL): the
file alone gives the connectors and their source offsets. tests/integration/
test_standalone_worker.py compares the same with a real standalone worker.
"""

import shutil
from pathlib import Path

import pytest

from offsets.edits.errors import ConnectorNotFound
from offsets.edits.kinds.offset_changes.writes import STANDALONE_FILE, choose_route
from offsets.formats.standalone_offsets_file import decode, encode
from offsets.kafka.standalone_worker import OffsetsFileProblem
from offsets.models import Cluster, ConnectorSnapshot, MalformedCount, RefreshRun, SourceOffset
from offsets.queries.offsets_export import export_connector
from offsets.refresh.run import run_refresh
from offsets.rights.grants import SHELL_OPERATOR
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "standalone"
KEY = b'["file-source",{"filename":"/tmp/sa-vec/input.txt"}]'
RESET_KEY = b'["file-source-2",{"filename":"/tmp/sa-vec/input-2.txt"}]'
NOW_MS = 1_800_000_000_000


@pytest.fixture
def offsets_file(tmp_path) -> Path:
    path = tmp_path / "connect.offsets"
    shutil.copy(FIXTURES / "two-sources-one-reset.offsets", path)
    return path


@pytest.fixture
def worker(offsets_file) -> Cluster:
    return Cluster.objects.create(
        name="edge", kind=Cluster.Kind.STANDALONE, offsets_file=str(offsets_file)
    )


def refreshed(cluster: Cluster, now_ms: int = NOW_MS) -> RefreshRun:
    run = run_refresh(cluster=cluster, now_ms=now_ms)
    run.refresh_from_db()
    return run


def test_it_shows_the_files_connectors_and_offsets(worker):
    run = refreshed(worker)
    assert (run.status, run.error) == (RefreshRun.Status.SUCCEEDED, "")
    assert run.records_read == 2
    names = set(ConnectorSnapshot.objects.filter(cluster=worker).values_list("name", flat=True))
    assert names == {"file-source"}  # file-source-2's one offset was reset
    offset = SourceOffset.objects.get(cluster=worker, connector="file-source")
    assert (offset.partition, offset.offset) == (
        {"filename": "/tmp/sa-vec/input.txt"},
        {"position": 34},
    )
    assert offset.commits == 1
    assert offset.last_commit_at.timestamp() * 1000 == NOW_MS  # the refresh's read time
    reset = SourceOffset.objects.get(cluster=worker, connector="file-source-2")
    assert reset.offset is None


def test_a_refresh_with_no_change_adds_no_commit(worker):
    refreshed(worker)
    run = refreshed(worker, NOW_MS + 60_000)
    assert (run.status, run.records_read) == (RefreshRun.Status.SUCCEEDED, 0)
    offset = SourceOffset.objects.get(cluster=worker, connector="file-source")
    assert offset.commits == 1
    assert offset.last_commit_at.timestamp() * 1000 == NOW_MS


def test_a_changed_offset_is_a_commit_at_the_next_refreshs_time(worker, offsets_file):
    refreshed(worker)
    entries = decode(offsets_file.read_bytes())
    entries[KEY] = b'{"position":61}'
    offsets_file.write_bytes(encode(entries))
    run = refreshed(worker, NOW_MS + 60_000)
    assert (run.status, run.records_read) == (RefreshRun.Status.SUCCEEDED, 1)
    offset = SourceOffset.objects.get(cluster=worker, connector="file-source")
    assert (offset.offset, offset.commits) == ({"position": 61}, 2)
    assert offset.last_commit_at.timestamp() * 1000 == NOW_MS + 60_000
    assert offset.first_commit_at.timestamp() * 1000 == NOW_MS


def test_a_key_gone_from_the_file_is_reset(worker, offsets_file):
    refreshed(worker)
    offsets_file.write_bytes(encode({RESET_KEY: None}))
    assert refreshed(worker, NOW_MS + 1000).status == RefreshRun.Status.SUCCEEDED
    assert SourceOffset.objects.get(cluster=worker, connector="file-source").offset is None


def test_a_malformed_entry_is_counted_once_however_many_refreshes(worker, offsets_file):
    offsets_file.write_bytes(encode({b"not json": b"{}", KEY: b'{"position":1}'}))
    refreshed(worker)
    refreshed(worker, NOW_MS + 1000)
    counts = MalformedCount.objects.filter(cluster=worker)
    assert [(c.topic, c.reason, c.count) for c in counts] == [
        (worker.offsets_topic, "key-not-json", 1)
    ]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda data: data[:100], "The file ends inside the length of a key"),
        (
            lambda data: data[:4] + b"\x00" + data[5:],
            "the byte 0x73 is expected (at byte 4)",
        ),
        (lambda data: b"", "ends inside"),
    ],
    ids=["truncated", "corrupt", "empty"],
)
def test_a_broken_file_fails_the_refresh_naming_file_and_byte(worker, offsets_file, damage, says):
    refreshed(worker)
    before = list(SourceOffset.objects.filter(cluster=worker).values())
    broken = damage(offsets_file.read_bytes())
    offsets_file.write_bytes(broken)
    run = refreshed(worker, NOW_MS + 1000)
    assert run.status == RefreshRun.Status.FAILED
    assert str(offsets_file) in run.error and says in run.error
    assert list(SourceOffset.objects.filter(cluster=worker).values()) == before
    assert offsets_file.read_bytes() == broken


def test_a_missing_file_fails_the_refresh_naming_it(worker, offsets_file):
    offsets_file.unlink()
    run = refreshed(worker)
    assert run.status == RefreshRun.Status.FAILED
    assert f"The offsets file {offsets_file} does not exist" in run.error


def test_hostile_connector_names_are_data(worker, offsets_file):
    name = "<script>alert(1)</script> ../../x"
    key = b'["' + name.encode() + b'",{"f":1}]'
    offsets_file.write_bytes(encode({key: b'{"position":1}'}))
    assert refreshed(worker).status == RefreshRun.Status.SUCCEEDED
    assert ConnectorSnapshot.objects.get(cluster=worker).name == name


def test_an_export_reads_the_file_as_the_worker_answers_get_offsets(worker):
    # What the real worker answered GET /connectors/{c}/offsets with when it wrote the file.
    assert export_connector(user=SHELL_OPERATOR, cluster=worker, connector="file-source") == {
        "offsets": [
            {"partition": {"filename": "/tmp/sa-vec/input.txt"}, "offset": {"position": 34}}
        ]
    }
    # Reset and not in a worker (none answers here): gone, as in a distributed cluster.
    with pytest.raises(ConnectorNotFound):
        export_connector(user=SHELL_OPERATOR, cluster=worker, connector="file-source-2")


def test_an_export_of_a_broken_file_names_it(worker, offsets_file):
    offsets_file.write_bytes(b"\xac\xed")
    with pytest.raises(OffsetsFileProblem, match=f"{offsets_file} .*at byte 2"):
        export_connector(user=SHELL_OPERATOR, cluster=worker, connector="file-source")


def test_a_source_edit_of_a_worker_that_does_not_run_is_refused_not_written_to_kafka(worker, user):
    edit = make_edit(worker, user, connector="file-source")
    chosen = choose_route(edit)
    assert not chosen.through_worker
    assert chosen.refusal == chosen.reason
    assert "no Connect worker URL" in chosen.reason and STANDALONE_FILE in chosen.reason


def test_the_pages_show_a_refreshed_standalone_worker(worker, client, user):
    refreshed(worker)
    client.force_login(user)
    for page in (
        "/",
        f"/clusters/{worker.name}/connectors/",
        f"/clusters/{worker.name}/connectors/file-source/",
        f"/clusters/{worker.name}/live/",
    ):
        response = client.get(page)
        assert response.status_code == 200, page
        text = response.content.decode()
        assert ("file-source" in text) if page != "/" else (str(worker.offsets_file) in text)
