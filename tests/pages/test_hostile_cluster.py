"""A cluster whose Connect users are hostile: every field a Connect record carries is generated.

Hypothesis builds a whole Connect cluster per example: connector names (empty, dot segments,
slashes, control characters, lone surrogates, 10 KB), config keys and values (with secrets
planted in every form the masking promises to catch, and long runs of letters), status traces
(with the same secrets), partition and offset maps (any string, huge integers, extreme
doubles, nesting the runtime refuses), and record timestamps (1970, now, the year 10000, the
largest long). The records are written in Connect's formats to topics of the session broker,
as a worker (or anyone with write access to its topics) would write them.

Then a real refresh (Spark) runs, and every page and API route and every export is fetched
for every connector. The refresh succeeds with exactly the planned bad records counted; no
answer is a 5xx; no planted secret appears; no page of a hostile connector takes more than a
few times the same page of a plain connector of the same cluster.
"""

import itertools
import time
from collections import Counter
from urllib.parse import quote

import pytest
from confluent_kafka.admin import NewTopic
from django.urls import reverse
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from offsets.formats import jackson
from offsets.formats.offset_records import MAX_CONNECTOR_LENGTH
from offsets.kafka import admin
from offsets.models import Cluster, ConnectorSnapshot, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.access import endpoints, sample_params
from tests.support.connect_topics import YEAR_10000_MS, write_records
from tests.support.edits_factory import make_edit

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

# Each example is a real refresh and a few hundred requests: few, but each one dense.
hostile = settings(
    database=None,
    deadline=None,
    max_examples=12,
    derandomize=True,
    # A failure prints its example; shrinking it would mean a refresh per attempt.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)

SECRET = "Zq7PlantedXk4"  # no character any masking rule stops at
# Every form SECURITY.md says is masked, each holding the planted secret.
SECRET_FORMS = [
    f"jdbc:postgresql://db:5432/app?user=app&password={SECRET}&ssl=true",
    f"Server=db;Database=app;User Id=app;Password={SECRET};",
    f"jdbc:oracle:thin:scott/{SECRET}@db:1521/orcl",
    f"redis://:{SECRET}@cache:6379/0",
    f"mongodb://app:{SECRET}/x@mongo:27017/app",
    f"Authorization: Bearer {SECRET}",
    f"Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={SECRET}",
    f'{{"type": "service_account", "private_key": "{SECRET}"}}',
    f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----",
    f"my.vault.token={SECRET}",
]
SECRET_NAMES = ["connection.password", "aws.secret.access.key", "ssl.key", "x.api-key"]

NOW_MS = int(time.time() * 1000)

# --- What a hostile user writes -------------------------------------------------------------

SPECIAL = [
    "",
    ".",
    "..",
    "/",
    "a/b",
    "~",
    "~x",
    "\\",
    "<script>alert(1)</script>",
    "\r\n",
    "%2F",
    "?#&=",
    '"',
    "'",
    "${env:X}",
    "\u202e",
    "café ☕",
]
# Any text a Java String can hold except NUL and lone surrogates (which have a test of their own).
storable_text = st.text(
    alphabet=st.characters(codec=None, blacklist_categories=("Cs",), blacklist_characters="\x00"),
    max_size=20,
) | st.sampled_from(SPECIAL)
unstorable_text = st.tuples(storable_text, st.sampled_from(["\x00", "\ud800", "\udfff"])).map(
    "".join
)
storable_names = storable_text | st.just("n" * MAX_CONNECTOR_LENGTH)
# Java longs and doubles: what a Connect offset map can hold.
huge_numbers = st.sampled_from([2**63 - 1, -(2**63), 1.7e308, -1.7e308, 5e-324, -0.0])
longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
primitives = (
    st.none()
    | st.booleans()
    | longs
    | huge_numbers
    | st.floats(allow_nan=False, allow_infinity=False)
    | storable_text
)
flat_maps = st.dictionaries(storable_text, primitives, min_size=1, max_size=3)
long_values = st.sampled_from(["a" * 200_000, "password" * 20_000, "://" + "x" * 100_000])
config_values = (
    storable_text | long_values | st.sampled_from(SECRET_FORMS).map(lambda form: f"see {form} here")
)

# A planned fault per offsets record, so that the expected counts are known by construction.
FAULTS = [
    None,
    "key-connector-unstorable",
    "key-partition-unstorable",
    "value-unstorable",
    "value-not-flat",
    "timestamp-out-of-range",
]


class Connector:
    """One connector as a hostile user writes it (a plain class: hypothesis prints its repr)."""

    def __init__(
        self,
        name: str,
        sink: bool,
        config: dict[str, str | None],
        trace: str,
        records: list[tuple[bytes, bytes | None, int, str | None]] | None = None,
    ) -> None:
        self.name, self.sink, self.config, self.trace = name, sink, config, trace
        self.records = records if records is not None else []

    def __repr__(self) -> str:
        # Short: a failing example prints every connector, and values run to 500 KB.
        return (
            f"Connector({self.name[:80]!r}, sink={self.sink}, "
            f"config keys={[key[:40] for key in self.config]}, "
            f"faults={[fault for *_, fault in self.records]})"
        )


@st.composite
def connectors(draw, name: str | None = None) -> Connector:
    name = draw(storable_names) if name is None else name
    sink = draw(st.booleans())
    config = {
        **draw(st.dictionaries(storable_text, config_values | st.none(), max_size=4)),
        **{key: SECRET for key in draw(st.lists(st.sampled_from(SECRET_NAMES), max_size=2))},
        "description": draw(st.sampled_from(SECRET_FORMS)),
        # Settings the refresh acts on: a topic name Kafka cannot hold, a pattern that does
        # not compile or backtracks without end.
        **draw(
            st.sampled_from(
                [
                    {},
                    {"offsets.storage.topic": "../" + "t" * 300},
                    {"topics.regex": "(a|aa)+$"},
                    {"topics.regex": "(["},
                ]
            )
        ),
        "connector.class": "io.example.SinkConnector" if sink else "io.example.SourceConnector",
        "tasks.max": "1",
    }
    if sink:
        config["topics"] = "orders"
    trace = (
        draw(storable_text) + "\n" + draw(st.sampled_from(SECRET_FORMS)) + "\n\tat x.Y(Y.java:1)"
    )
    connector = Connector(name, sink, config, trace)
    if not sink:
        for fault in draw(st.lists(st.sampled_from(FAULTS), min_size=1, max_size=6)):
            connector.records.append(draw(offsets_record(name, fault)))
    return connector


@st.composite
def offsets_record(draw, name: str, fault: str | None):
    """(key, value, timestamp ms, planned fault) of one record of the worker's offsets topic."""
    partition = draw(flat_maps)
    offset = draw(flat_maps | st.none())
    timestamp = draw(st.sampled_from([NOW_MS, 0, NOW_MS - 86_400_000]))
    if fault == "key-connector-unstorable":
        name = draw(unstorable_text | st.just("x" * (MAX_CONNECTOR_LENGTH + 1)))
    elif fault == "key-partition-unstorable":
        partition[draw(storable_text)] = draw(unstorable_text)
    elif fault == "value-unstorable":
        offset = {**(offset or {}), "file": draw(unstorable_text)}
    elif fault == "value-not-flat":
        offset = {"nested": draw(st.sampled_from([[1], {"a": 1}, [[[]]]]))}
    elif fault == "timestamp-out-of-range":
        timestamp = draw(st.sampled_from([YEAR_10000_MS, 2**63 - 1]))
    key = jackson.dumps_key(name, partition)
    return key, None if offset is None else jackson.dumps(offset), timestamp, fault


@st.composite
def clusters(draw) -> list[Connector]:
    """A plain connector (the yardstick for page times) and a few hostile ones."""
    plain = draw(connectors(name="plain-source"))
    plain.sink = False
    plain.config["connector.class"] = "io.example.SourceConnector"
    plain.records = [draw(offsets_record("plain-source", None)) for _ in range(3)]
    names = draw(st.lists(storable_names, min_size=1, max_size=3, unique=True))
    return [plain, *(draw(connectors(name=n)) for n in names if n != "plain-source")]


# --- Writing it in Connect's formats --------------------------------------------------------

_clusters = itertools.count(1)


def connect_records(connectors: list[Connector], topics: dict[str, str]) -> list[tuple]:
    """(topic, key, value, timestamp) as a worker writes its three topics."""
    records = []
    for c in connectors:
        # Java's StringSerializer writes a String as UTF-8; no name here has a lone surrogate.
        name = c.name.encode()
        records += [
            (
                topics["configs"],
                b"connector-" + name,
                jackson.dumps({"properties": c.config}),
                None,
            ),
            (
                topics["configs"],
                b"task-" + name + b"-0",
                jackson.dumps({"properties": {**c.config, "task.class": "io.example.Task"}}),
                None,
            ),
            (topics["configs"], b"commit-" + name, jackson.dumps({"tasks": 1}), None),
            (
                topics["status"],
                b"status-connector-" + name,
                jackson.dumps(
                    {"state": "FAILED", "trace": c.trace, "worker_id": "w:8083", "generation": 1}
                ),
                None,
            ),
            (
                topics["status"],
                b"status-task-" + name + b"-0",
                jackson.dumps(
                    {"state": "FAILED", "trace": c.trace, "worker_id": "w:8083", "generation": 1}
                ),
                None,
            ),
        ]
        records += [(topics["offsets"], k, v, ts) for k, v, ts, _ in c.records]
    # A record the config topic cannot parse, its example kept (masked) for the home page.
    records.append(
        (topics["configs"], b"connector-broken", f"{{not json {SECRET_FORMS[0]}".encode(), None)
    )
    return records


def write_cluster(bootstrap: str, connectors: list[Connector]) -> Cluster:
    number = next(_clusters)
    topics = {kind: f"hostile-{number}-{kind}" for kind in ("offsets", "configs", "status")}
    settings = {"bootstrap.servers": bootstrap}
    kafka_admin = admin.admin_client(settings)
    # The broker refuses timestamps far in the future unless the topic allows them.
    far = {"message.timestamp.after.max.ms": str(2**63 - 1)}
    futures = kafka_admin.create_topics([NewTopic(t, 1, 1, config=far) for t in topics.values()])
    for future in futures.values():
        future.result(30)
    write_records(settings, connect_records(connectors, topics))
    return Cluster.objects.create(
        name=f"hostile-{number}",
        bootstrap_servers=bootstrap,
        offsets_topic=topics["offsets"],
        configs_topic=topics["configs"],
        status_topic=topics["status"],
    )


# --- Reading it as every user would ---------------------------------------------------------


def urls_of(cluster: Cluster, name: str, edit_pk: int) -> list[tuple[str, str]]:
    """(route name, URL) of every route, with this connector in the connector routes."""
    params = sample_params(
        cluster=cluster.name, connector=name, edit_pk=edit_pk, admin_pk=cluster.pk
    )
    found = [(e.name, e.url) for e in endpoints(params)]
    export = reverse("edits-export", args=[cluster.name])
    connector = quote(name.encode(), safe="")
    found += [
        ("export-one", f"{export}?connector={connector}"),
        ("export-one-history", f"{export}?connector={connector}&from_beginning=on"),
        ("export-all", export),
        ("export-all-history", f"{export}?from_beginning=on"),
        ("api-export-all", f"/api/v1/edits/export/?cluster={cluster.name}&from_beginning=true"),
        ("api-export-one", f"/api/v1/edits/export/?cluster={cluster.name}&connector={connector}"),
        ("page-2", reverse("connectors", args=[cluster.name]) + "?page=2"),
    ]
    return found


def fetch_all(
    http, cluster: Cluster, name: str, edit_pk: int, fetched: set[str]
) -> dict[str, tuple[int, float]]:
    """GET every route not in `fetched` (the URLs already asked for, which it adds to);
    return {route: (status, seconds)}, asserting no 5xx and no secret.

    A route whose URL holds no connector (the clusters overview, the audit, the admin) is the
    same request for every connector, so it is asked once per cluster.
    """
    answers = {}
    for route, url in urls_of(cluster, name, edit_pk):
        if url in fetched:
            continue
        fetched.add(url)
        started = time.perf_counter()
        response = http.get(url)
        elapsed = time.perf_counter() - started
        body = b"".join(response) if response.streaming else response.content
        # /readyz answers 503 while not ready (no scheduler runs here): that is its answer.
        allowed = {200, 503} if route == "readyz" else set(range(100, 500))
        assert response.status_code in allowed, (route, url[:300], body[:2000])
        assert SECRET.encode() not in body, (route, url[:300])
        assert SECRET not in str(response.headers), (route, url[:300])
        answers[route] = (response.status_code, elapsed)
    return answers


@hostile
@given(cluster_connectors=clusters())
@example(
    # The cases at once: names a URL cannot hold, a 249-character name, a long run of
    # letters in a config value, and every kind of record the refresh cannot keep.
    cluster_connectors=[
        Connector("plain-source", False, {"connector.class": "io.example.SourceConnector"}, "t"),
        Connector(
            "",
            False,
            {"connector.class": "io.example.SourceConnector", "x": "a" * 500_000},
            f"boom {SECRET_FORMS[5]}",
            [
                (jackson.dumps_key("", {"f": "a"}), jackson.dumps({"p": 1.7e308}), NOW_MS, None),
                (jackson.dumps_key("", {"f": "b"}), jackson.dumps({"p": -1.7e308}), NOW_MS, None),
                (
                    jackson.dumps_key("", {"f": "a"}),
                    jackson.dumps({"p": 1}),
                    YEAR_10000_MS,
                    "timestamp-out-of-range",
                ),
                (
                    jackson.dumps_key("\ud800", {"f": "a"}),
                    b"{}",
                    NOW_MS,
                    "key-connector-unstorable",
                ),
                (jackson.dumps_key("", {"\x00": 1}), b"{}", NOW_MS, "key-partition-unstorable"),
            ],
        ),
        Connector("a/b", True, {"connector.class": "io.example.SinkConnector", "topics": "t"}, ""),
        Connector("..", False, {"connector.class": "io.example.SourceConnector"}, "\r\n"),
        Connector(
            "n" * MAX_CONNECTOR_LENGTH, False, {"connector.class": "io.example.SourceConnector"}, ""
        ),
    ]
)
def test_a_hostile_cluster_refreshes_and_every_page_answers_without_a_secret(
    kafka_bootstrap, spark, settings, tmp_path, client, admin_user, cluster_connectors
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    cluster = write_cluster(kafka_bootstrap, cluster_connectors)

    run = run_refresh(cluster=cluster, spark=spark)

    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    planned = Counter(
        fault for c in cluster_connectors for *_, fault in c.records if fault is not None
    )
    assert run.malformed_by_reason.get(cluster.offsets_topic, {}) == dict(planned)
    # A config or status key with no name after its prefix is not one the parsers recognise
    # (Connect's REST API refuses an empty name too): the empty-named connector's three config
    # records and two status records are counted, and it is stored only by its offsets.
    empty = any(c.name == "" for c in cluster_connectors)
    counts = run.malformed_by_reason
    assert sum(counts[cluster.configs_topic].values()) == 1 + 3 * empty
    assert sum(counts.get(cluster.status_topic, {}).values()) == 2 * empty
    assert counts[cluster.configs_topic]["value-not-json"] == 1
    stored = set(ConnectorSnapshot.objects.filter(cluster=cluster).values_list("name", flat=True))
    named = {c.name for c in cluster_connectors if c.name}
    assert named <= stored <= named | {""}

    client.force_login(admin_user)
    edit = make_edit(cluster, admin_user, connector=cluster_connectors[-1].name)
    fetched: set[str] = set()
    yardstick = fetch_all(client, cluster, "plain-source", edit.pk, fetched)
    for c in cluster_connectors[1:]:
        answers = fetch_all(client, cluster, c.name, edit.pk, fetched)
        assert answers, c.name[:50]  # its own pages at least: its name is in their URLs
        # Every route answers for a stored connector as for the plain one, and in comparable
        # time; one the refresh did not keep (an empty name without offsets) may be a 404.
        for route, (status, elapsed) in answers.items():
            plain_status, plain_elapsed = yardstick[route]
            if c.name in stored:
                assert status == plain_status, (route, c.name[:50], status, plain_status)
            else:
                assert status in (plain_status, 404), (route, c.name[:50], status)
            assert elapsed < 25 * plain_elapsed + 2.0, (route, c.name[:50], elapsed, plain_elapsed)
