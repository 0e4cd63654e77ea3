"""What every store of a sink's offsets is read through: its setting as a plain value, the
offsets as {(topic, partition): next offset}, and the one error a store raises."""

from dataclasses import dataclass, field

# A sink's offsets in its store: {(topic, partition): the next offset it reads}.
StoreOffsets = dict[tuple[str, int], int]

CONNECT_GROUP = "connect_group"
REMOTE_GROUP = "remote_group"
PLUGIN_FILE = "plugin_file"


class StoreUnreadable(Exception):
    """The store does not hold offsets the dashboard can read (a malformed file, say)."""


@dataclass(frozen=True)
class StoreSetting:
    """One sink's store, resolved from its SinkOffsetsStore row on the thread that may read
    the database: a store module reads Kafka or a file with it, never the database."""

    kind: str
    group_id: str = ""  # a group's id (Connect's group: the sink's own)
    cluster: str = ""  # the registered cluster that group lives on
    kafka: dict = field(default_factory=dict, compare=False)  # that cluster's client settings
    path: str = ""  # the plugin's offsets file

    def where(self) -> str:
        """The store in words, as the pages, the API and the audit log name it."""
        if self.kind == PLUGIN_FILE:
            return f"offsets file {self.path}"
        if self.kind == REMOTE_GROUP:
            return f"group {self.group_id} on cluster {self.cluster}"
        return ""
