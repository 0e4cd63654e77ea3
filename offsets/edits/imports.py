"""Stage one draft edit per connector from an imported KIP-875/KIP-199 document or ConfigMap."""

from dataclasses import dataclass

from django.db import transaction

from offsets.domain.connectors import Connector
from offsets.domain.rights import Action
from offsets.edits import drafts
from offsets.edits.errors import (
    ConnectorNotFound,
    DocumentInputError,
    EditInputError,
    NothingToChange,
)
from offsets.edits.kinds.offline_file.kind import offline, suits
from offsets.edits.kinds.offset_changes.diff import draft, preview_edit
from offsets.edits.kinds.offset_changes.request import Preview, StageRequest
from offsets.edits.live import LiveReader, read_connector
from offsets.formats import strimzi
from offsets.formats.offsets_json import (
    OffsetsDocumentError,
    PartitionOffset,
    load_document,
    parse_kip199,
    parse_kip875,
)
from offsets.models import AuditEvent, Cluster, OffsetEdit
from offsets.rights import gate

# An imported document is read and parsed whole, in memory: this bounds what one upload costs.
IMPORT_MAX_BYTES = 20 * 1024 * 1024


@dataclass
class ImportResult:
    previews: list[Preview]
    edits: list[OffsetEdit]
    # Connectors named in the document whose offsets already match.
    unchanged: dict[str, str]


def import_document(
    *,
    cluster: Cluster,
    user,
    data: bytes | str | object,
    connector: str = "",
    dry_run: bool = False,
    comment: str = "",
) -> ImportResult:
    """Stage one draft edit per connector from a KIP-875 or KIP-199 document.

    ``data`` may also be a Strimzi offsets ConfigMap (YAML or JSON; see
    ``offsets.formats.strimzi``), read as the KIP-875 document it holds for ``connector`` or
    the connector it names. Never applies anything. Everything is checked before anything is saved: a bad entry
    anywhere stages nothing (EditInputError naming the field). With ``dry_run`` nothing is
    saved at all and the previews are returned.
    """
    document = _load_upload(data) if isinstance(data, bytes | str) else data
    if strimzi.is_kubernetes_object(document):
        document, connector = _read_configmap(document, connector)
    names = [connector] if connector else _kip199_names(document)
    # The gate, for every connector the document names, before anything is read: a name
    # outside the user's grants refuses the whole document, as an unknown name would.
    action = Action.VIEW if dry_run else Action.STAGE
    gate.admit(user, action, cluster, None, message="Importing offsets needs the editor role.")
    gate.admit_all(user, action, cluster, names)
    reader = LiveReader(cluster)
    if connector:
        contexts, entries = _read_kip875(cluster, reader, document, connector)
    else:
        contexts, entries = _read_kip199(cluster, reader, document, names)
    previews, unchanged = _previews(cluster, reader, contexts, entries)
    if dry_run:
        return ImportResult(previews=previews, edits=[], unchanged=unchanged)
    saved = [draft(preview, cluster) for preview in previews]
    if saved and suits(cluster, StageRequest(strategy="import")):
        # A stopped standalone worker: only its file can take them.
        saved = [offline(d, staged_as="import", reader=reader) for d in saved]
    with transaction.atomic():
        edits = [
            drafts.save(d, user=user, comment=comment, action=AuditEvent.Action.IMPORTED)
            for d in saved
        ]
    return ImportResult(previews=previews, edits=edits, unchanged=unchanged)


def _previews(
    cluster: Cluster,
    reader: LiveReader,
    contexts: dict[str, Connector],
    entries: dict[str, list[PartitionOffset]],
) -> tuple[list[Preview], dict[str, str]]:
    """Each connector's diff, and why nothing changes for those whose offsets already match.

    A bad entry of any connector raises DocumentInputError naming that connector.
    """
    previews: list[Preview] = []
    unchanged: dict[str, str] = {}
    for name, connector_entries in entries.items():
        request = StageRequest(strategy="import", entries=tuple(connector_entries))
        try:
            previews.append(
                preview_edit(
                    cluster=cluster,
                    connector=name,
                    request=request,
                    reader=reader,
                    context=contexts[name],
                )
            )
        except NothingToChange as exc:
            unchanged[name] = exc.message
        except EditInputError as exc:
            where = f"{exc.field}: " if exc.field else ""
            raise DocumentInputError(f"{where}{exc.message}", field=name) from None
    return previews, unchanged


def _load_upload(data: bytes | str) -> object:
    """Parse an upload as JSON, else (when it does not even start like JSON) as YAML."""
    try:
        return load_document(data)
    except OffsetsDocumentError as exc:
        json_error = exc
    head = data.lstrip()[:1] if isinstance(data, str) else data.lstrip()[:1].decode("latin-1")
    if head in ("{", "[", '"', ""):
        raise DocumentInputError(json_error.message, field=json_error.field)
    try:
        document = strimzi.load_yaml(data)
    except OffsetsDocumentError as exc:
        raise DocumentInputError(
            f"neither JSON ({json_error.message}) nor a YAML ConfigMap ({exc.message})",
            field="document",
        ) from None
    if not strimzi.is_kubernetes_object(document):
        raise DocumentInputError(
            f"{json_error.message}; as YAML it is no Kubernetes ConfigMap either",
            field="document",
        )
    return document


def _read_configmap(document: object, connector: str) -> tuple[dict, str]:
    """The KIP-875 document a ConfigMap holds, and its connector: the one given, else its own."""
    try:
        configmap = strimzi.parse_configmap(document)
    except OffsetsDocumentError as exc:
        raise DocumentInputError(exc.message, field=exc.field) from None
    connector = connector or configmap.connector or ""
    if not connector:
        raise EditInputError(
            "This ConfigMap does not name its connector (no "
            f"{strimzi.CONNECTOR_ANNOTATION} annotation nor KafkaConnector owner): "
            "say which connector it is for.",
            field="connector",
        )
    return configmap.document, connector


Parsed = tuple[dict[str, Connector], dict[str, list[PartitionOffset]]]


def _read_kip875(cluster: Cluster, reader: LiveReader, document: object, connector: str) -> Parsed:
    """Return the one named connector's context and entries."""
    context = read_connector(cluster=cluster, connector=connector, reader=reader)
    try:
        entries = parse_kip875(document, connector_type=context.type)
    except OffsetsDocumentError as exc:
        raise DocumentInputError(exc.message, field=exc.field) from None
    return {connector: context}, {connector: entries}


def _kip199_names(document: object) -> list[str]:
    """The connectors a KIP-199 document names, in its order (its shape checked, not read)."""
    if isinstance(document, dict) and set(document) == {"offsets"}:
        raise EditInputError(
            "This is a KIP-875 document (one connector): say which connector it is for.",
            field="connector",
        )
    try:
        return list(parse_kip199(document))
    except OffsetsDocumentError as exc:
        raise DocumentInputError(exc.message, field=exc.field) from None


def _read_kip199(
    cluster: Cluster, reader: LiveReader, document: object, names: list[str]
) -> Parsed:
    """Return every connector the document names, with its context and entries."""
    contexts = {}
    for name in names:
        try:
            contexts[name] = read_connector(cluster=cluster, connector=name, reader=reader)
        except ConnectorNotFound as exc:
            raise DocumentInputError(exc.message, field=name) from None
    try:
        entries = parse_kip199(document, connector_types={n: c.type for n, c in contexts.items()})
    except OffsetsDocumentError as exc:
        raise DocumentInputError(exc.message, field=exc.field) from None
    return contexts, entries
