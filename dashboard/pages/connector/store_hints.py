"""Where a sink's offsets are read, on its connector page: the store an admin set, or the
admin's form to set one, filled in with what the connector's config suggests."""

from urllib.parse import urlencode

from django.urls import reverse

from offsets import sink_stores
from offsets.domain.connectors import suggested_offsets_file
from offsets.models import Cluster, ConnectorSnapshot, SinkOffsetsStore


def store_hint(cluster: Cluster, snapshot: ConnectorSnapshot) -> dict[str, object] | None:
    """For a sink: its store setting's admin page, or the form to add one.

    The plugin's class suggests its own file (`offsets.file`); nothing is stored until an
    admin saves the form.
    """
    if snapshot.type != "sink" or snapshot.deleted:
        return None
    row = sink_stores.store_of(cluster, snapshot.name)
    if row is not None:
        return {
            "set": True,
            "url": reverse("admin:offsets_sinkoffsetsstore_change", args=[row.pk]),
        }
    initial: dict[str, object] = {"cluster": cluster.pk, "connector": snapshot.name}
    suggested = suggested_offsets_file(snapshot.config)
    if suggested is not None:
        initial |= {"kind": SinkOffsetsStore.Kind.PLUGIN_FILE, "offsets_file": suggested}
    return {
        "set": False,
        "suggested": suggested,
        "url": f"{reverse('admin:offsets_sinkoffsetsstore_add')}?{urlencode(initial)}",
    }
