"""The clusters overview: each cluster's connector counts, sink lag and refreshes."""

from dataclasses import dataclass, field

from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)

from offsets.domain import pauses
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    RefreshRun,
)
from offsets.queries.snapshots.choices import (
    DELETED,
    PAUSED_RANK,
    PLANNED_PAUSE,
    STATE_CHOICES,
    problem_case,
    problem_label,
    severity_rank,
)
from offsets.queries.snapshots.refresh_state import RefreshState


@dataclass(frozen=True)
class ConnectorCounts:
    """What the overview says of a cluster's connectors: it changes only with a refresh."""

    connectors: int = 0
    counts_by_state: dict[str, int] = field(default_factory=dict)
    total_sink_lag: int | None = None
    worst_lag_status: str | None = None
    failed_tasks: int = 0
    # The connector to look at first ("problems first" order) and what is wrong with it, and
    # how many connectors have a problem (a pause by their owner is none).
    worst_connector: str | None = None
    worst_problem: str = ""
    problems: int = 0


@dataclass(frozen=True)
class ClusterRuns:
    """A cluster with its refresh state."""

    cluster: Cluster
    refresh: RefreshState


@dataclass(frozen=True)
class ClusterSummary:
    cluster: Cluster
    connectors: int
    counts_by_state: dict[str, int]
    total_sink_lag: int | None
    worst_lag_status: str | None
    refresh: RefreshState
    failed_tasks: int = 0
    worst_connector: str | None = None
    worst_problem: str = ""
    problems: int = 0


def cluster_summaries(
    clusters: QuerySet[Cluster] | None = None, only: dict[int, Q] | None = None
) -> list[ClusterSummary]:
    """Summarise every cluster: connector counts by state, sink lag, worst status, refreshes.

    Four queries whatever the number of clusters and connectors, and two more per cluster in
    `only`, whose connectors are counted only if its filter keeps them (a user's grants).
    """
    only = only or {}
    runs = cluster_runs(clusters)
    counts = connector_counts([row.cluster.pk for row in runs if row.cluster.pk not in only])
    for pk, keep in only.items():
        counts.update(connector_counts([pk], keep))
    return summarize(runs, counts)


def cluster_runs(clusters: QuerySet[Cluster] | None = None) -> list[ClusterRuns]:
    """Every cluster with its latest run and latest success (two queries)."""
    clusters = Cluster.objects.all() if clusters is None else clusters
    latest_run = RefreshRun.objects.filter(cluster=OuterRef("pk")).order_by("-started_at", "-pk")
    rows = list(
        clusters.annotate(
            last_run_id=Subquery(latest_run.values("pk")[:1]),
            last_success_id=Subquery(
                latest_run.filter(status=RefreshRun.Status.SUCCEEDED).values("pk")[:1]
            ),
        )
    )
    run_ids = {r.last_run_id for r in rows} | {r.last_success_id for r in rows}
    runs = RefreshRun.objects.in_bulk([pk for pk in run_ids if pk is not None])
    return [
        ClusterRuns(
            cluster=row,
            refresh=RefreshState(
                runs.get(row.last_run_id), runs.get(row.last_success_id), row.refresh_every_seconds
            ),
        )
        for row in rows
    ]


def connector_counts(cluster_ids: list[int], only: Q | None = None) -> dict[int, ConnectorCounts]:
    """Connector counts by state, sink lag, worst status, problems and the worst connector
    of each cluster (two queries); of the connectors `only` keeps, if given (a user's grants)."""
    groups = _count_groups(cluster_ids, only)
    counts: dict[int, dict[str, int]] = {pk: {} for pk in cluster_ids}
    totals: dict[int, int] = {}
    sink_lag: dict[int, int | None] = {}
    worst: dict[int, str | None] = {}
    failed_tasks: dict[int, int] = {}
    problems: dict[int, int] = {}
    for group in groups:
        cluster_id, kind, state, deleted, status, external, task_failed, problem = group[:8]
        paused, count, lag, tasks = group[8:]
        status = pauses.shown_status(status, paused=paused)
        key = DELETED if deleted else "FAILED" if task_failed else state
        if not deleted:
            failed_tasks[cluster_id] = failed_tasks.get(cluster_id, 0) + (tasks or 0)
        if key:
            counts[cluster_id][key] = counts[cluster_id].get(key, 0) + count
        totals[cluster_id] = totals.get(cluster_id, 0) + count
        if problem < PAUSED_RANK:
            problems[cluster_id] = problems.get(cluster_id, 0) + count
        if kind == "sink" and not external and lag is not None:
            sink_lag[cluster_id] = (sink_lag.get(cluster_id) or 0) + lag
        if severity_rank(status) > severity_rank(worst.get(cluster_id)):
            worst[cluster_id] = status
    order = {state: index for index, state in enumerate(STATE_CHOICES)}
    worst_connectors = _worst_connectors(cluster_ids, only) if problems else {}
    return {
        pk: ConnectorCounts(
            connectors=totals.get(pk, 0),
            counts_by_state=dict(
                sorted(counts[pk].items(), key=lambda item: order.get(item[0], len(order)))
            ),
            total_sink_lag=sink_lag.get(pk),
            worst_lag_status=worst.get(pk),
            failed_tasks=failed_tasks.get(pk, 0),
            worst_connector=worst_connectors.get(pk, (None, None))[0],
            worst_problem=problem_label(worst_connectors.get(pk, (None, None))[1]),
            problems=problems.get(pk, 0),
        )
        for pk in cluster_ids
    }


def _worst_connectors(cluster_ids: list[int], only: Q | None) -> dict[int, tuple[str, int]]:
    """Each cluster's first connector in the list's "problems first" order, when it has a
    problem, with its rank (one query)."""
    first = (
        ConnectorSnapshot.objects.filter(only or Q(), cluster=OuterRef("pk"))
        .annotate(problem=problem_case())
        .filter(problem__lt=PAUSED_RANK)
        .order_by("problem", "name")
    )
    rows = (
        Cluster.objects.filter(pk__in=cluster_ids)
        .annotate(
            worst_name=Subquery(first.values("name")[:1]),
            worst_rank=Subquery(first.values("problem")[:1]),
        )
        .order_by()
        .values_list("pk", "worst_name", "worst_rank")
    )
    return {pk: (name, rank) for pk, name, rank in rows if name is not None}


def _count_groups(cluster_ids: list[int], only: Q | None) -> QuerySet:
    """The clusters' connectors grouped by what the overview counts them by, with their
    count, sink lag and failed tasks.

    One small GROUP BY instead of a conditional aggregate per state: a few groups per
    cluster, folded by `connector_counts`.
    """
    return (
        ConnectorSnapshot.objects.filter(only or Q(), cluster__in=cluster_ids)
        # A connector whose task failed counts as FAILED, as the list's state filter has it.
        .annotate(
            task_failed=ExpressionWrapper(Q(failed_tasks__gt=0), output_field=BooleanField()),
            problem=problem_case(),
            paused=ExpressionWrapper(PLANNED_PAUSE, output_field=BooleanField()),
        )
        .values_list(
            "cluster_id",
            "type",
            "runtime_state",
            "deleted",
            "lag_status",
            "offsets_managed_externally",
            "task_failed",
            "problem",
            "paused",
        )
        .annotate(count=Count("pk"), lag=Sum("lag_records"), tasks=Sum("failed_tasks"))
        .order_by()
    )


def summarize(runs: list[ClusterRuns], counts: dict[int, ConnectorCounts]) -> list[ClusterSummary]:
    """The overview's rows from the clusters' runs and their connectors' counts."""
    summaries = []
    for row in runs:
        connectors = counts.get(row.cluster.pk) or ConnectorCounts()
        summaries.append(
            ClusterSummary(
                cluster=row.cluster,
                connectors=connectors.connectors,
                counts_by_state=connectors.counts_by_state,
                total_sink_lag=connectors.total_sink_lag,
                worst_lag_status=connectors.worst_lag_status,
                refresh=row.refresh,
                failed_tasks=connectors.failed_tasks,
                worst_connector=connectors.worst_connector,
                worst_problem=connectors.worst_problem,
                problems=connectors.problems,
            )
        )
    return summaries
