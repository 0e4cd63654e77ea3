"""Strimzi offsets ConfigMaps: built from KIP-875, read back, and every bad upload named."""

import json
from types import SimpleNamespace

import pytest
import yaml

from offsets.formats import strimzi
from offsets.formats.offsets_json import OffsetsDocumentError, PartitionOffset, to_kip875

SOURCE = to_kip875(
    [
        PartitionOffset({"filename": "a.txt"}, {"position": 42}),
        PartitionOffset({"filename": 'b\n"q" café 😀', "shard": 2}, {"pos": 7, "ratio": 0.5}),
    ]
)
SINK = to_kip875(
    [
        PartitionOffset({"kafka_topic": "orders", "kafka_partition": 0}, {"kafka_offset": 5}),
        PartitionOffset({"kafka_topic": "orders", "kafka_partition": 1}, {"kafka_offset": 9}),
    ]
)
HOSTILE_NAMES = [
    "orders-sink",
    "we\"ird'name",
    "line\nbreak: and # comment",
    "café 日本 😀",
    "a/b",
    "  spaces  ",
    "- not a list",
    "*alias &anchor",
    "x" * 300,
]


def round_trip(configmap: dict) -> strimzi.ConfigMapOffsets:
    text = strimzi.dump_yaml(configmap)
    return strimzi.parse_configmap(strimzi.load_yaml(text.encode("utf-8")))


def configmap(**overrides) -> dict:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "orders-offsets"}}
    doc["data"] = {"offsets.json": json.dumps(SINK)}
    doc.update(overrides)
    return doc


def error_of(document: object) -> OffsetsDocumentError:
    with pytest.raises(OffsetsDocumentError) as error:
        strimzi.parse_configmap(document)
    return error.value


@pytest.mark.parametrize("document", [SOURCE, SINK])
@pytest.mark.parametrize("connector", HOSTILE_NAMES)
def test_a_document_survives_the_yaml_configmap_round_trip(document, connector):
    built = strimzi.to_configmap(document, connector=connector)
    back = round_trip(built)
    assert back.document == document
    assert back.connector == connector
    assert back.name == built["metadata"]["name"]
    assert strimzi.name_problem(back.name) is None


def test_the_configmap_has_strimzis_shape():
    built = strimzi.to_configmap(SINK, connector="orders", namespace="kafka")
    assert built["apiVersion"] == "v1" and built["kind"] == "ConfigMap"
    assert built["metadata"]["name"] == "orders-offsets"
    assert built["metadata"]["namespace"] == "kafka"
    assert set(built["data"]) == {"offsets.json"}
    # The value is the bare KIP-875 document: Strimzi PATCHes it to Connect as it is.
    assert json.loads(built["data"]["offsets.json"]) == SINK
    text = strimzi.dump_yaml(built)
    assert "  offsets.json: |\n    {\n" in text
    assert yaml.safe_load(text) == built


def test_a_connector_name_kubernetes_cannot_take_gets_a_valid_distinct_name():
    assert strimzi.configmap_name("orders") == "orders-offsets"
    names = {strimzi.configmap_name(n) for n in ("a/b", "a_b", "A-b", "a-b")}
    assert len(names) == 4
    for connector in [*HOSTILE_NAMES, "", "日本", "...", "-x-"]:
        name = strimzi.configmap_name(connector)
        assert strimzi.name_problem(name) is None, (connector, name)
        assert name.endswith("-offsets")


def test_a_given_name_and_namespace_are_checked():
    assert strimzi.to_configmap(SINK, connector="x", name="my.offsets")["metadata"]["name"] == (
        "my.offsets"
    )
    for bad in ("My-Offsets", "a_b", "-a", "a-", "a..b", "x" * 254):
        assert strimzi.name_problem(bad)
        with pytest.raises(ValueError, match=r"DNS-1123|at most 253"):
            strimzi.to_configmap(SINK, connector="x", name=bad)
    assert strimzi.namespace_problem("kafka") is None
    assert strimzi.namespace_problem("a.b") and strimzi.namespace_problem("x" * 64)


def test_offsets_larger_than_a_configmap_holds_are_refused_on_export():
    big = to_kip875(
        [PartitionOffset({"f": f"{i:08}" + "x" * 100}, {"p": i}) for i in range(10_000)]
    )
    with pytest.raises(ValueError, match="at most 1 MiB"):
        strimzi.to_configmap(big, connector="big")


def test_strimzis_own_configmap_names_its_connector_by_the_owner_reference():
    # As listOffsets writes it: Jackson's pretty printer, Strimzi's labels, the owner.
    pretty = '{\n  "offsets" : [ {\n    "partition" : {\n      "kafka_partition" : 0,\n'
    pretty += '      "kafka_topic" : "orders"\n    },\n    "offset" : {\n'
    pretty += '      "kafka_offset" : 5\n    }\n  } ]\n}'
    text = f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: my-connector-offsets
  namespace: kafka
  labels:
    strimzi.io/kind: KafkaConnector
    app.kubernetes.io/managed-by: strimzi-cluster-operator
  ownerReferences:
  - apiVersion: kafka.strimzi.io/v1beta2
    kind: KafkaConnector
    name: my-connector
    uid: 0c1a5e4e-6a8c-4f55-9c43-2d3e4e5f6a7b
data:
  offsets.json: {json.dumps(pretty)}
"""
    parsed = strimzi.parse_configmap(strimzi.load_yaml(text))
    assert parsed.connector == "my-connector"
    assert parsed.document == {
        "offsets": [
            {
                "partition": {"kafka_partition": 0, "kafka_topic": "orders"},
                "offset": {"kafka_offset": 5},
            }
        ]
    }


def test_a_configmap_naming_no_connector_says_none():
    assert strimzi.parse_configmap(configmap()).connector is None


def test_json_configmaps_are_read_like_yaml_ones():
    text = json.dumps(strimzi.to_configmap(SOURCE, connector="src"))
    assert strimzi.parse_configmap(strimzi.load_yaml(text)).document == SOURCE
    assert strimzi.is_kubernetes_object(json.loads(text))


def test_a_kip199_document_is_not_taken_for_a_kubernetes_object():
    assert not strimzi.is_kubernetes_object({"kind": [], "apiVersion": []})
    assert not strimzi.is_kubernetes_object({"offsets": []})
    assert not strimzi.is_kubernetes_object(["kind"])


@pytest.mark.parametrize(
    ("document", "field", "message"),
    [
        ("just text", "document", "must be a Kubernetes ConfigMap (a mapping), not a string"),
        ([1, 2], "document", "must be a Kubernetes ConfigMap (a mapping), not an array"),
        (configmap(kind="Secret"), "kind", "must be ConfigMap, not 'Secret'"),
        (configmap(kind=None), "kind", "must be ConfigMap, not None"),
        (configmap(apiVersion="v2"), "apiVersion", "must be v1 for a ConfigMap, not 'v2'"),
        (configmap(metadata=["x"]), "metadata", "must be a mapping"),
        (configmap(data=None), "data", "is required, with the key offsets.json"),
        (configmap(data="x"), "data", "must be a mapping, not a string"),
        (
            configmap(data={"other.json": "{}"}),
            'data["offsets.json"]',
            "is required: Strimzi's KafkaConnector keeps the offsets there (keys found: "
            "other.json)",
        ),
        (
            configmap(data={"offsets.json": {"offsets": []}}),
            'data["offsets.json"]',
            "must be a string holding JSON, not an object",
        ),
        (
            configmap(data={"offsets.json": "{bad"}),
            'data["offsets.json"]',
            "invalid JSON at line 1, column 2",
        ),
        (
            configmap(data={"offsets.json": '{"offsets": [{"partition": {}, "offset": null}]}'}),
            'data["offsets.json"].offsets[0].partition',
            "must not be empty",
        ),
        (
            configmap(data={"offsets.json": '{"connector": "x", "offsets": []}'}),
            'data["offsets.json"].connector',
            "unexpected field",
        ),
        (
            configmap(data={"offsets.json": "x" * (strimzi.CONFIGMAP_MAX_BYTES + 1)}),
            'data["offsets.json"]',
            "larger than the 1 MiB a ConfigMap holds",
        ),
        (
            configmap(data=None, binaryData={"offsets.json": "e30="}),
            'binaryData["offsets.json"]',
            "must be under data as text",
        ),
    ],
)
def test_each_bad_configmap_gets_a_clear_message(document, field, message):
    error = error_of(document)
    assert error.field == field
    assert message in error.message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"a: [1, 2", "invalid YAML at line 1, column 9"),
        (b"\xff\xfe not utf-8", "is not UTF-8"),
        (b"a: 1\n---\nb: 2\n", "expected a single document"),
        (b"a: &x 1\nb: *x\n", "anchors and aliases are not accepted"),
        (b"!!python/object:os.system {}\n", "could not determine a constructor"),
        (b"x" * (strimzi.UPLOAD_MAX_BYTES + 1), "may take at most 2 MiB"),
    ],
)
def test_bad_yaml_is_refused_with_its_reason(text, message):
    with pytest.raises(OffsetsDocumentError) as error:
        strimzi.load_yaml(text)
    assert error.value.field == "document"
    assert message in error.value.message


@pytest.fixture
def composed_nodes(monkeypatch):
    """Counts the YAML nodes the loader composes: the work done before a refusal."""
    compose_node = strimzi._Loader.compose_node
    counter = SimpleNamespace(count=0)

    def counting(loader, parent, index):
        counter.count += 1
        return compose_node(loader, parent, index)

    monkeypatch.setattr(strimzi._Loader, "compose_node", counting)
    return counter


def test_a_yaml_alias_bomb_is_refused_at_once(composed_nodes):
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 30):
        prev = chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
        name = chr(ord("a") + n % 26) * (n // 26 + 1)
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]")
    bomb = "\n".join(lines).encode()
    with pytest.raises(OffsetsDocumentError, match="anchors and aliases are not accepted"):
        strimzi.load_yaml(bomb)
    # Refused at the first anchor: fewer nodes than the first line's list of nine alone.
    assert composed_nodes.count < 9


HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
UNREADABLE = {
    "deep flow": (HEAD + "x: " + "[" * 5000 + "]" * 5000, "nesting deeper than 20 levels"),
    "deep blocks": (HEAD + "".join("  " * i + f"k{i}:\n" for i in range(30)), "deeper than 20"),
    "integer of thousands of digits": (HEAD + "x: " + "9" * 5000, "an integer of 5,000 characters"),
    "hex integer": (HEAD + "x: 0x" + "f" * 5000, "an integer of 5,002 characters"),
    "base 60 integer": (HEAD + "x: 1" + ":59" * 30000, "an integer of 90,001 characters"),
    "year zero": (HEAD + "x: 0000-01-01", "cannot read '0000-01-01' as a timestamp"),
    "month 13": (HEAD + "x: 2001-13-45", "month must be in 1..12"),
    "tagged february 30": (HEAD + "x: !!timestamp 2001-02-30", "day is out of range"),
    "hour 25": (HEAD + "x: 2001-02-28T25:00:00Z", "hour must be in 0..23"),
    "offset of 99 hours": (HEAD + "x: 2001-02-28 10:00:00 +99:00", "as a timestamp"),
    "tagged int that is none": (HEAD + "x: !!int 1e5", "cannot read '1e5' as a int"),
    "a million values": (HEAD + "x: [" + "1," * 700_000 + "1]", "more than 10,000 values"),
}


@pytest.mark.parametrize(("text", "message"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_document_python_cannot_hold_is_refused_with_its_reason_at_once(
    text, message, composed_nodes
):
    with pytest.raises(OffsetsDocumentError) as error:
        strimzi.load_yaml(text.encode())
    # At once: no more nodes than the limits allow are built before the refusal.
    assert composed_nodes.count <= strimzi.YAML_MAX_VALUES + 1
    assert error.value.field == "document"
    assert "invalid YAML at line" in error.value.message and message in error.value.message


@pytest.mark.parametrize("odd", ["\x85", "\u2028", "\u2029", "\n\x85", "\x85\r\n"])
def test_yamls_extra_line_breaks_survive_the_configmap_round_trip(odd):
    name = f"orders{odd}src"
    document = {
        "offsets": [
            {"partition": {f"file{odd}": f"/data/a{odd}b.log"}, "offset": {"note": f"x{odd}y"}}
        ]
    }
    text = strimzi.dump_yaml(strimzi.to_configmap(document, connector=name))
    back = strimzi.parse_configmap(strimzi.load_yaml(text.encode("utf-8")))
    assert (back.connector, back.document) == (name, document)
