"""The domain models, one module per area; import them from here."""

from offsets.models.cluster import Cluster

__all__ = ["Cluster"]
