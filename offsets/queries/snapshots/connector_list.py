"""The connectors list: filters, sorts and the reasons behind a connector's status."""

from django.db.models import (
    Case,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)

from offsets.domain import pauses
from offsets.domain.pauses import PAUSED
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    SinkPartitionLag,
)
from offsets.queries.snapshots.choices import (
    CONNECTOR_SORTS,
    CONNECTOR_STATES,
    DELETED,
    ERR_REASONS,
    PLANNED_PAUSE,
    order_by,
    problem_case,
    severity_case,
    severity_rank,
)


def connectors(
    *,
    cluster: Cluster,
    q: str = "",
    type: str = "",
    state: str = "",
    status: str = "",
    sort: str = "name",
) -> QuerySet[ConnectorSnapshot]:
    """Return the cluster's connector snapshots filtered and sorted, one query when evaluated.

    Call `with_partition_status()` on the rows shown to get the reasons of their status.
    """
    rows = (
        ConnectorSnapshot.objects.filter(cluster=cluster)
        # The list never shows configs; they can be large.
        .defer("config")
    )
    rows = _with_sort_field(rows, sort.lstrip("-"))
    if q:
        rows = rows.filter(name__icontains=q)
    if type:
        rows = rows.filter(type=type)
    if state == DELETED:
        rows = rows.filter(deleted=True)
    elif state == "FAILED":
        # Connect leaves a connector RUNNING when only its tasks fail.
        rows = rows.filter(Q(runtime_state=state) | Q(failed_tasks__gt=0), deleted=False)
    elif state:
        rows = rows.filter(runtime_state=state, deleted=False)
    # A status filter lists the connectors whose badge says it: a planned pause shows (and
    # is counted) as PAUSED, never as ERR or STOP (offsets.domain.pauses).
    if status == PAUSED:
        rows = rows.filter(PLANNED_PAUSE)
    elif status in ("OK", "WARN", "ERR"):
        rows = rows.filter(lag_status=status).exclude(PLANNED_PAUSE)
    elif status == "STOP":
        rows = rows.filter(_has_reason(status)).exclude(PLANNED_PAUSE)
    elif status in ERR_REASONS:
        rows = rows.filter(_has_reason(status))
    return rows.order_by(*order_by(CONNECTOR_SORTS, sort), "name")


def _with_sort_field(rows: QuerySet, field: str) -> QuerySet:
    """Annotate the computed field a sort needs; only that one: each costs ORM time on every
    request."""
    if field == "problems":
        return rows.annotate(problem=problem_case())
    if field == "status":
        return rows.annotate(severity=severity_case("lag_status"))
    if field == "state":
        return rows.annotate(
            state_order=Case(
                When(deleted=True, then=Value(len(CONNECTOR_STATES))),
                *(
                    When(runtime_state=name, then=Value(index))
                    for index, name in enumerate(CONNECTOR_STATES)
                ),
                default=Value(len(CONNECTOR_STATES) + 1),
                output_field=IntegerField(),
            )
        )
    return rows


def _has_reason(reason: str) -> Q:
    partition_has = Exists(
        SinkPartitionLag.objects.filter(
            cluster=OuterRef("cluster"), connector=OuterRef("name"), status=reason
        )
    )
    if reason == "STALL":
        return partition_has | Q(type="source", stalled_partitions__gt=0)
    if reason == "REWIND":
        return partition_has | Q(type="source", rewinds__gt=0)
    return partition_has


NO_COMMIT_YET = "no commit yet"
NOT_COPIED_YET = "not copied yet"


def mirrors(*, cluster: Cluster) -> QuerySet[ConnectorSnapshot]:
    """The cluster's mirrors with an upstream cluster (only that field read)."""
    return connectors(cluster=cluster).exclude(upstream_cluster="").only("upstream_cluster")


def status_reasons(snapshot: ConnectorSnapshot) -> list[str]:
    """Why a connector is not OK: STALL, STOP (not for a planned pause) or REWIND, from its partitions; for a sink
    lagging from where its consumer starts, "no commit yet"; for a mirror with upstream
    partitions it never copied from, "not copied yet"."""
    reasons = []
    worst = getattr(snapshot, "worst_partition_status", None)
    if worst in ERR_REASONS:
        reasons.append(worst)
    if snapshot.uncommitted_partitions:
        reasons.append(NO_COMMIT_YET if snapshot.type == "sink" else NOT_COPIED_YET)
    if snapshot.type == "source":
        if snapshot.stalled_partitions and "STALL" not in reasons:
            reasons.append("STALL")
        if snapshot.rewinds and "REWIND" not in reasons:
            reasons.append("REWIND")
    return pauses.shown_reasons(reasons, paused=snapshot.paused_by_owner)


def with_partition_status(
    rows: list[ConnectorSnapshot], *, cluster: Cluster
) -> list[ConnectorSnapshot]:
    """Set `worst_partition_status` on each sink and mirror of `rows` (one query for all)."""
    sinks = [row.name for row in rows if row.type == "sink" or row.upstream_cluster]
    worst: dict[str, str] = {}
    if sinks:
        statuses = (
            SinkPartitionLag.objects.filter(cluster=cluster, connector__in=sinks)
            .values_list("connector", "status")
            # Without the model's ordering, whose columns would join the DISTINCT and make
            # it return every partition.
            .order_by()
            .distinct()
        )
        for connector, status in statuses:
            if severity_rank(status) > severity_rank(worst.get(connector)):
                worst[connector] = status
    for row in rows:
        row.worst_partition_status = worst.get(row.name)
    return rows


def get_connector(*, cluster_name: str, name: str) -> ConnectorSnapshot | None:
    """Return a connector's snapshot with its cluster (one query; two for a sink)."""
    snapshot = (
        ConnectorSnapshot.objects.select_related("cluster")
        .filter(cluster__name=cluster_name, name=name)
        .first()
    )
    if snapshot is not None:
        with_partition_status([snapshot], cluster=snapshot.cluster)
    return snapshot


def connector_of(cluster: Cluster, name: str) -> ConnectorSnapshot | None:
    """Return a connector's snapshot in a cluster read already (one query).

    Call `with_partition_status()` on it before `status_reasons()`.
    """
    return ConnectorSnapshot.objects.filter(cluster=cluster, name=name).first()
