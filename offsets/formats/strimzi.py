"""Strimzi's connector-offsets ConfigMap: build one from a KIP-875 document, read one back.

Strimzi's ``KafkaConnector`` writes a connector's offsets to a ConfigMap on ``listOffsets``
and alters them from one on ``alterOffsets``; both use the data key ``offsets.json``, whose
value is Connect's ``GET /connectors/{name}/offsets`` answer as JSON text (Strimzi
pretty-prints it), sent as is to ``PATCH /connectors/{name}/offsets``. Format reference:
strimzi-kafka-operator ``AbstractConnectOperator`` (``generateListOffsetsConfigMap``,
``getOffsetsForAlterRequest``), ``KafkaConnectAssemblyOperator``
(``getConnectorOffsetsConfigMapEntryKey``) and ``KafkaConnectApiImpl.getConnectorOffsets``.

The value stays exactly a KIP-875 document, since Connect refuses fields it does not know;
the connector's exact name travels in an annotation (any string may stand there, unlike in
names and labels). A ConfigMap Strimzi wrote names its connector in its ``KafkaConnector``
owner reference instead.
"""

import hashlib
import re
from dataclasses import dataclass

import yaml

from offsets.formats import jackson
from offsets.formats.offsets_json import OffsetsDocumentError, load_document, parse_kip875

OFFSETS_KEY = "offsets.json"
CONNECTOR_ANNOTATION = "connect-offsets-dashboard/connector"
# Kubernetes keeps a ConfigMap's data within 1 MiB (etcd's object size), so a larger
# offsets.json could never be applied nor written by Strimzi.
CONFIGMAP_MAX_BYTES = 1024 * 1024
# An uploaded ConfigMap is its data plus metadata and YAML's indentation: anything past
# this is no ConfigMap, and the pure-Python YAML parser is not handed it.
UPLOAD_MAX_BYTES = 2 * CONFIGMAP_MAX_BYTES
# A ConfigMap nests four levels (metadata.ownerReferences[0].name) and holds a few dozen
# values; its offsets are one string. The limits stop the pure-Python parser early on
# documents shaped otherwise: a 2 MiB upload of a million values took it 15 s, one nested
# 5,000 deep 2 s before failing in recursion. Reading 2 MiB of long strings takes it ~2.5 s.
YAML_MAX_DEPTH = 20
YAML_MAX_VALUES = 10_000
# Python's own limit on an integer's digits; a longer YAML integer is refused before
# conversion (base 60 "1:59:59:..." would take quadratic time to reach it).
YAML_INT_MAX_CHARS = 4300

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*")
_NAME_MAX = 253
_NAMESPACE_MAX = 63
_NAME_SUFFIX = "-offsets"
_NOT_IN_NAME = re.compile(r"[^a-z0-9.-]+")
_DATA_FIELD = f'data["{OFFSETS_KEY}"]'


@dataclass(frozen=True)
class ConfigMapOffsets:
    """An uploaded ConfigMap: its name, the connector it names (if any), its KIP-875 document."""

    name: str
    connector: str | None
    document: dict


def configmap_name(connector: str) -> str:
    """A DNS-1123 subdomain name for the connector's ConfigMap: ``<connector>-offsets``.

    A connector name Kubernetes cannot take as it is (any string is a connector name) is
    lowercased and its other characters become '-', with a hash of the exact name added so
    that two names that read alike still get two ConfigMaps.
    """
    base = _NOT_IN_NAME.sub("-", connector.lower())
    base = re.sub(r"-{2,}|\.{2,}", lambda m: m.group(0)[0], base).strip("-.")
    if base and base == connector and len(base) + len(_NAME_SUFFIX) <= _NAME_MAX:
        return base + _NAME_SUFFIX
    digest = hashlib.sha256(connector.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    room = _NAME_MAX - len(_NAME_SUFFIX) - len(digest) - 1
    base = base[:room].strip("-.")
    return f"{base}-{digest}{_NAME_SUFFIX}" if base else f"connector-{digest}{_NAME_SUFFIX}"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a ConfigMap (a DNS-1123 subdomain), or None."""
    if len(name) > _NAME_MAX:
        return f"must be at most {_NAME_MAX} characters"
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        return (
            "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


def namespace_problem(namespace: str) -> str | None:
    """Why ``namespace`` cannot name a Kubernetes namespace (a DNS-1123 label), or None."""
    if len(namespace) > _NAMESPACE_MAX or not re.fullmatch(_DNS1123_LABEL, namespace):
        return (
            "must be a DNS-1123 label: at most 63 lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def to_configmap(document: dict, *, connector: str, name: str = "", namespace: str = "") -> dict:
    """The ConfigMap holding a KIP-875 document the way Strimzi's listOffsets writes it.

    Raises ValueError for a bad ``name`` or ``namespace``, or offsets past Kubernetes' limit.
    """
    name = name or configmap_name(connector)
    if problem := name_problem(name):
        raise ValueError(f"ConfigMap name {name!r} {problem}")
    if namespace and (problem := namespace_problem(namespace)):
        raise ValueError(f"Namespace {namespace!r} {problem}")
    text = _escape_yaml_breaks(jackson.dumps_text(document, indent=2)) + "\n"
    if len(text.encode("utf-8")) > CONFIGMAP_MAX_BYTES:
        raise ValueError(
            f"The offsets take {len(text.encode('utf-8')) / 2**20:.1f} MiB: a ConfigMap holds at "
            "most 1 MiB. Export them as KIP-875 JSON instead."
        )
    metadata: dict = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata["annotations"] = {CONNECTOR_ANNOTATION: connector}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": {OFFSETS_KEY: text},
    }


def dump_yaml(configmap: dict) -> str:
    """YAML for ``kubectl apply -f``: offsets.json as a literal block, any name escaped."""
    return yaml.dump(
        configmap, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False
    )


def is_kubernetes_object(document: object) -> bool:
    """Whether a parsed upload is a Kubernetes object rather than a KIP-875/KIP-199 document.

    A KIP-199 document maps connector names to lists, so a string ``kind`` or ``apiVersion``
    (even for a connector called "kind") marks a Kubernetes object.
    """
    return isinstance(document, dict) and any(
        isinstance(document.get(field), str) for field in ("kind", "apiVersion")
    )


def load_yaml(data: bytes | str) -> object:
    """Parse uploaded YAML; too large, bad UTF-8, bad YAML or aliases raise OffsetsDocumentError."""
    size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    if size > UPLOAD_MAX_BYTES:
        raise OffsetsDocumentError(
            "document",
            f"is {size / 2**20:.1f} MiB: a ConfigMap holds at most 1 MiB of data, and an "
            f"uploaded one may take at most {UPLOAD_MAX_BYTES // 2**20} MiB",
        )
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OffsetsDocumentError(
                "document", f"is not UTF-8 (byte {exc.start}): Kubernetes reads UTF-8 only"
            ) from None
    try:
        return yaml.load(data, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        context = getattr(exc, "context", None)
        problem = getattr(exc, "problem", None) or str(exc)
        problem = f"{context}, {problem}" if context else problem
        raise OffsetsDocumentError("document", f"invalid YAML{where}: {problem}") from None


def parse_configmap(document: object) -> ConfigMapOffsets:
    """Read a ConfigMap (a parsed upload) holding a KIP-875 document under ``offsets.json``.

    Errors name the field at fault, the offsets document's own under ``data["offsets.json"]``.
    """
    if not isinstance(document, dict):
        raise OffsetsDocumentError(
            "document",
            f"must be a Kubernetes ConfigMap (a mapping), not {jackson.describe_type(document)}",
        )
    if document.get("kind") != "ConfigMap":
        raise OffsetsDocumentError("kind", f"must be ConfigMap, not {document.get('kind')!r}")
    if document.get("apiVersion") != "v1":
        raise OffsetsDocumentError(
            "apiVersion", f"must be v1 for a ConfigMap, not {document.get('apiVersion')!r}"
        )
    metadata = document.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise OffsetsDocumentError("metadata", "must be a mapping")
    text = _offsets_text(document)
    try:
        offsets = load_document(text)
        parse_kip875(offsets)
    except OffsetsDocumentError as exc:
        field = _DATA_FIELD if exc.field == "document" else f"{_DATA_FIELD}.{exc.field}"
        raise OffsetsDocumentError(field, exc.message) from None
    name = metadata.get("name")
    return ConfigMapOffsets(
        name=name if isinstance(name, str) else "",
        connector=_named_connector(metadata),
        document=offsets,
    )


def _offsets_text(document: dict) -> str:
    data = document.get("data")
    binary = document.get("binaryData")
    if (
        isinstance(binary, dict)
        and OFFSETS_KEY in binary
        and not (isinstance(data, dict) and OFFSETS_KEY in data)
    ):
        raise OffsetsDocumentError(
            f'binaryData["{OFFSETS_KEY}"]',
            "must be under data as text: Strimzi's alterOffsets reads data only",
        )
    if data is None:
        raise OffsetsDocumentError("data", f"is required, with the key {OFFSETS_KEY}")
    if not isinstance(data, dict):
        raise OffsetsDocumentError("data", f"must be a mapping, not {jackson.describe_type(data)}")
    if OFFSETS_KEY not in data:
        found = ", ".join(sorted(map(str, data))) or "none"
        raise OffsetsDocumentError(
            _DATA_FIELD,
            f"is required: Strimzi's KafkaConnector keeps the offsets there (keys found: {found})",
        )
    text = data[OFFSETS_KEY]
    if not isinstance(text, str):
        raise OffsetsDocumentError(
            _DATA_FIELD,
            f"must be a string holding JSON, not {jackson.describe_type(text)} "
            "(quote it, or write it as a block: offsets.json: |)",
        )
    if len(text.encode("utf-8", "surrogatepass")) > CONFIGMAP_MAX_BYTES:
        raise OffsetsDocumentError(_DATA_FIELD, "is larger than the 1 MiB a ConfigMap holds")
    return text


def _named_connector(metadata: dict) -> str | None:
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        named = annotations.get(CONNECTOR_ANNOTATION)
        if isinstance(named, str) and named:
            return named
    # Strimzi's own listOffsets ConfigMap is owned by the KafkaConnector, named as the connector.
    owners = metadata.get("ownerReferences")
    for owner in owners if isinstance(owners, list) else []:
        if isinstance(owner, dict) and owner.get("kind") == "KafkaConnector":
            named = owner.get("name")
            if isinstance(named, str) and named:
                return named
    return None


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing multi-line strings as literal blocks (where YAML allows one)."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if any(char in value for char in _YAML_ONLY_BREAKS):
        # Double quotes are the one style that escapes them (\N, \L, \P).
        style = '"'
    else:
        style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


# YAML 1.1 reads NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR as line breaks, where JSON and
# Java read them as characters: written raw, they would come back as newlines or spaces.
_YAML_ONLY_BREAKS = ("\x85", "\u2028", "\u2029")


def _escape_yaml_breaks(json_text: str) -> str:
    """JSON text with YAML's extra line breaks as JSON escapes (they occur in strings only)."""
    for char in _YAML_ONLY_BREAKS:
        json_text = json_text.replace(char, f"\\u{ord(char):04x}")
    return json_text


_Dumper.add_representer(str, _represent_str)


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases: no ConfigMap needs them, and aliases
    nested in aliases expand exponentially (the "billion laughs"). It also refuses nesting
    and values past a ConfigMap's, and turns a value Python cannot hold (a date that does
    not exist, an integer of thousands of digits) into an error that says where."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values = 0

    def compose_node(self, parent, index):
        self._depth += 1
        self._values += 1
        if self._depth > YAML_MAX_DEPTH:
            self._refuse(f"nesting deeper than {YAML_MAX_DEPTH} levels: no ConfigMap does")
        if self._values > YAML_MAX_VALUES:
            self._refuse(f"more than {YAML_MAX_VALUES:,} values: a ConfigMap holds a few dozen")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            tag = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value!r:.60} as a {tag}: {exc}", node.start_mark
            ) from None

    def _refuse(self, problem: str) -> None:
        raise yaml.composer.ComposerError(None, None, problem, self.peek_event().start_mark)

    def fetch_anchor(self) -> None:
        self._refuse_alias("an anchor (&)")

    def fetch_alias(self) -> None:
        self._refuse_alias("an alias (*)")

    def _refuse_alias(self, what: str) -> None:
        raise yaml.scanner.ScannerError(
            None, None, f"{what}: anchors and aliases are not accepted", self.get_mark()
        )


def _construct_str(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    # YAML reads the escape "\ud83d\ude00" as two lone surrogates, where JSON (and so a JSON
    # ConfigMap's reader) reads one character.
    value = loader.construct_scalar(node)
    return _SURROGATE_PAIR.sub(
        lambda pair: pair.group().encode("utf-16", "surrogatepass").decode("utf-16"), value
    )


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    if len(node.value) > YAML_INT_MAX_CHARS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"an integer of {len(node.value):,} characters: at most {YAML_INT_MAX_CHARS} are read",
            node.start_mark,
        )
    return loader.construct_yaml_int(node)


_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_Loader.add_constructor("tag:yaml.org,2002:str", _construct_str)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
