"""A real standalone worker (ConnectStandalone) and its offsets file, as the dashboard reads
and edits them: through its REST API while it runs, and in the file while it is stopped.

The module starts its own worker on the session's broker (its data topics are its own): a
standalone worker keeps its source offsets in a local file, which the session's distributed
worker does not have. Each test stands alone (xdist may give them to different processes).
"""

import struct
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkit.embedded import EmbeddedKafka, StartedWorker
from devkit.standalone import start_standalone
from offsets.edits import workflow
from offsets.edits.workflow import OfflineChange, OffsetChange, StageRequest
from offsets.formats.standalone_offsets_file import HEADER, decode, encode, hashmap_sizing
from offsets.models import Cluster, ConnectorSnapshot, OffsetEdit, RefreshRun, SourceOffset
from offsets.queries.offsets_export import export_connector
from offsets.refresh.run import run_refresh
from offsets.rights.grants import SHELL_OPERATOR
from tests.support.connect_rest import ConnectRest, canonical, wait_until
from tests.support.worker_files import (
    byte_position,
    file_source,
    wait_for_values,
    write_lines,
)

LINES = ["alpha", "beta", "gamma", "delta"]


@dataclass
class Standalone:
    """One standalone worker running one FileStreamSource, and its files."""

    runtime: EmbeddedKafka
    bootstrap_servers: str
    name: str
    folder: Path
    worker: StartedWorker | None = None

    @property
    def offsets_file(self) -> Path:
        return self.folder / "connect.offsets"

    @property
    def input_file(self) -> Path:
        return self.folder / "input.txt"

    @property
    def topic(self) -> str:
        return f"{self.name}-lines"

    @property
    def rest(self) -> ConnectRest:
        return ConnectRest(self.worker.url)

    def start(self) -> None:
        self.worker = start_standalone(
            self.runtime,
            bootstrap_servers=self.bootstrap_servers,
            name=self.name,
            offsets_file=self.offsets_file,
            connectors={self.name: file_source(self.input_file, self.topic)},
        )

    def stop(self) -> None:
        self.runtime.stop_worker(self.worker)

    def wait_for_position(self, position: int) -> list[dict]:
        """Until the worker says, and the file holds, the connector at `position`."""
        expected = [
            {"partition": {"filename": str(self.input_file)}, "offset": {"position": position}}
        ]
        self.rest.wait_for_offsets(self.name, lambda found: canonical(found) == canonical(expected))
        return wait_until(
            lambda: decode(self.offsets_file.read_bytes()) if self.offsets_file.exists() else {},
            lambda entries: (
                f'"position":{position}'.encode() in b"".join(v or b"" for v in entries.values())
            ),
            timeout=60,
            what=f"position {position} in {self.offsets_file}",
        )

    def cluster(self) -> Cluster:
        return Cluster.objects.create(
            name=f"sa-{uuid.uuid4().hex[:8]}",
            kind=Cluster.Kind.STANDALONE,
            offsets_file=str(self.offsets_file),
            connect_url=self.worker.url,
            bootstrap_servers=self.bootstrap_servers,
        )


@pytest.fixture(scope="module")
def standalone(kafka_runtime, tmp_path_factory):
    folder = tmp_path_factory.mktemp("standalone")
    setup = Standalone(
        EmbeddedKafka(folder / "run"),
        kafka_runtime.bootstrap_servers,
        f"standalone-{uuid.uuid4().hex[:8]}",
        folder,
    )
    write_lines(setup.input_file, LINES)
    setup.start()
    setup.wait_for_position(byte_position(LINES, len(LINES)))
    yield setup
    setup.stop()


def test_the_dashboards_view_equals_the_workers_get_offsets(db, standalone, history_dir):
    standalone.rest.wait_for_state(standalone.name, "RUNNING")
    cluster = standalone.cluster()
    run = run_refresh(cluster=cluster)
    run.refresh_from_db()
    assert (run.status, run.error) == (RefreshRun.Status.SUCCEEDED, "")
    answer = standalone.rest.offsets(standalone.name)
    stored = SourceOffset.objects.filter(
        cluster=cluster, connector=standalone.name, offset__isnull=False
    )
    assert canonical([{"partition": o.partition, "offset": o.offset} for o in stored]) == canonical(
        answer["offsets"]
    )
    assert canonical(
        export_connector(user=SHELL_OPERATOR, cluster=cluster, connector=standalone.name)["offsets"]
    ) == (canonical(answer["offsets"]))
    snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=standalone.name)
    assert (snapshot.type, snapshot.runtime_state, snapshot.deleted) == ("source", "RUNNING", False)


def test_an_edit_through_the_running_workers_rest_api(db, standalone, approver, second_approver):
    rest = standalone.rest
    rest.stop(standalone.name)
    rest.wait_for_state(standalone.name, "STOPPED")
    cluster = standalone.cluster()
    partition = {"filename": str(standalone.input_file)}
    edit = workflow.stage(
        cluster=cluster,
        connector=standalone.name,
        user=approver,
        change=OffsetChange(StageRequest("set", partition=partition, offset={"position": 6})),
    )
    edit = workflow.submit_edit(edit=edit, user=approver)
    edit = workflow.approve_edit(edit=edit, user=second_approver)
    edit = workflow.apply_edit(edit=edit, user=second_approver)
    assert (edit.state, edit.error) == (OffsetEdit.State.APPLIED, "")
    assert edit.applied_via == OffsetEdit.AppliedVia.WORKER
    assert rest.offsets(standalone.name)["offsets"] == [
        {"partition": partition, "offset": {"position": 6}}
    ]
    standalone.wait_for_position(6)  # the worker wrote its file at once
    rest.call("PUT", f"/connectors/{standalone.name}/resume")
    standalone.wait_for_position(byte_position(LINES, len(LINES)))


def test_an_offline_edit_is_where_the_restarted_worker_resumes(
    db, standalone, approver, second_approver
):
    cluster = standalone.cluster()
    standalone.stop()
    try:
        before = wait_for_values(
            {"bootstrap.servers": standalone.bootstrap_servers}, standalone.topic, 1
        )
        partition = {"filename": str(standalone.input_file)}
        after_alpha = byte_position(LINES, 1)
        edit = workflow.stage(
            cluster=cluster,
            connector=standalone.name,
            user=approver,
            change=OfflineChange(
                StageRequest("set", partition=partition, offset={"position": after_alpha})
            ),
        )
        edit = workflow.submit_edit(edit=edit, user=approver)
        edit = workflow.approve_edit(edit=edit, user=second_approver)
        edit = workflow.apply_edit(edit=edit, user=second_approver)
        assert (edit.state, edit.error) == (OffsetEdit.State.APPLIED, "")
        assert edit.applied_via == OffsetEdit.AppliedVia.FILE
    finally:
        standalone.start()
    # Re-read from after "alpha": beta, gamma and delta again, after what was there.
    values = wait_for_values(
        {"bootstrap.servers": standalone.bootstrap_servers},
        standalone.topic,
        len(before) + len(LINES) - 1,
    )
    assert values[len(before) :] == LINES[1:]
    standalone.wait_for_position(byte_position(LINES, len(LINES)))


def test_a_truncated_file_is_a_clear_error_and_never_overwritten(
    db, standalone, tmp_path, approver
):
    copy = tmp_path / "connect.offsets"
    data = standalone.offsets_file.read_bytes()
    copy.write_bytes(data[: len(data) - 5])
    cluster = Cluster.objects.create(
        name=f"sa-{uuid.uuid4().hex[:8]}", kind=Cluster.Kind.STANDALONE, offsets_file=str(copy)
    )
    run = run_refresh(cluster=cluster)
    run.refresh_from_db()
    assert run.status == RefreshRun.Status.FAILED
    assert str(copy) in run.error and "at byte" in run.error
    assert copy.read_bytes() == data[: len(data) - 5]


def test_the_worker_sizes_its_map_as_the_encoder_does(standalone):
    # 13 more partitions than the one it reads: past a HashMap's first table of 16.
    rest = standalone.rest
    rest.stop(standalone.name)
    rest.wait_for_state(standalone.name, "STOPPED")
    extra = [
        {"partition": {"filename": f"/nowhere/{n}"}, "offset": {"position": n}} for n in range(13)
    ]
    try:
        rest.patch_offsets(standalone.name, {"offsets": extra})
        data = wait_until(
            standalone.offsets_file.read_bytes,
            lambda data: len(decode(data)) >= 14,
            timeout=60,
            what="14 entries in the file",
        )
        # After the header: loadFactor, threshold, then block data of 8 (0x7708): buckets, size.
        at = len(HEADER) + 4
        threshold, block, buckets, size = struct.unpack(">iHii", data[at : at + 14])
        assert (block, size) == (0x7708, len(decode(data)))
        assert (threshold, buckets) == hashmap_sizing(size)
        assert decode(encode(decode(data))) == decode(data)
    finally:
        gone = [{"partition": entry["partition"], "offset": None} for entry in extra]
        rest.patch_offsets(standalone.name, {"offsets": gone})
        rest.call("PUT", f"/connectors/{standalone.name}/resume")
    standalone.wait_for_position(byte_position(LINES, len(LINES)))
