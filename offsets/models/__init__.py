"""The domain models, one module per area; import them from here."""

from offsets.models.cluster import Cluster
from offsets.models.edits import AuditEvent, OffsetEdit, OffsetEditChange

__all__ = [
    "AuditEvent",
    "Cluster",
    "OffsetEdit",
    "OffsetEditChange",
]
