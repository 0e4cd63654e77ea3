"""Read what the last refresh stored, for the pages and the API (no Kafka I/O here).

Every function returns a bounded number of queries whatever the number of rows: the pages
show 1,000 connectors and 10,000 partitions, so nothing here may query once per row. One
module per page: `overview`, `connector_list`, `connector_detail`; `refresh_state` for the
freshness banner, `choices` for filters and sorts, `paging` for pages of rows.
"""

from offsets.queries.snapshots.choices import (
    CONNECTOR_SORTS,
    CONNECTOR_STATES,
    CONNECTOR_TYPES,
    DELETED,
    ERR_REASONS,
    LAG_STATUSES,
    MAX_COMMIT_BUCKETS,
    MAX_LAG_SAMPLES,
    PARTITION_SORTS,
    SINK_PARTITION_SORTS,
    STATE_CHOICES,
    severity_rank,
)
from offsets.queries.snapshots.connector_detail import (
    NOT_CURRENT_HEADER,
    Bucket,
    LagPoint,
    commit_buckets,
    default_chart_partition,
    export_document,
    export_entries,
    get_source_partition,
    key_drifts,
    lag_series,
    newer_offsets_not_stored,
    rewinds,
    sink_partitions,
    source_partitions,
    with_position_ages,
)
from offsets.queries.snapshots.connector_list import (
    NO_COMMIT_YET,
    NOT_COPIED_YET,
    connector_of,
    connectors,
    get_connector,
    mirrors,
    status_reasons,
    with_partition_status,
)
from offsets.queries.snapshots.overview import (
    ClusterRuns,
    ClusterSummary,
    ConnectorCounts,
    cluster_runs,
    cluster_summaries,
    connector_counts,
    summarize,
)
from offsets.queries.snapshots.paging import paginate
from offsets.queries.snapshots.refresh_state import RefreshState, refresh_state

__all__ = [
    "CONNECTOR_SORTS",
    "CONNECTOR_STATES",
    "CONNECTOR_TYPES",
    "DELETED",
    "ERR_REASONS",
    "LAG_STATUSES",
    "MAX_COMMIT_BUCKETS",
    "MAX_LAG_SAMPLES",
    "NOT_COPIED_YET",
    "NOT_CURRENT_HEADER",
    "NO_COMMIT_YET",
    "PARTITION_SORTS",
    "SINK_PARTITION_SORTS",
    "STATE_CHOICES",
    "Bucket",
    "ClusterRuns",
    "ClusterSummary",
    "ConnectorCounts",
    "LagPoint",
    "RefreshState",
    "cluster_runs",
    "cluster_summaries",
    "commit_buckets",
    "connector_counts",
    "connector_of",
    "connectors",
    "default_chart_partition",
    "export_document",
    "export_entries",
    "get_connector",
    "get_source_partition",
    "key_drifts",
    "lag_series",
    "mirrors",
    "newer_offsets_not_stored",
    "paginate",
    "refresh_state",
    "rewinds",
    "severity_rank",
    "sink_partitions",
    "source_partitions",
    "status_reasons",
    "summarize",
    "with_partition_status",
    "with_position_ages",
]
