"""Probes for an orchestrator: /healthz (the process answers) and /readyz (it can serve).

Both answer JSON without a login and name no cluster, connector or setting: they are reached
by anyone who can reach the port. `probes`, the first middleware, answers them before the
others: an orchestrator calls them over plain HTTP with the pod's address as the Host, which
SECURE_SSL_REDIRECT would answer with a redirect (a kubelet counts any 3xx as success, ready
or not) and ALLOWED_HOSTS with a 400 (never ready).
"""

from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Max
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from offsets.domain.schedule import ClusterTurn, overdue
from offsets.models import Cluster, SchedulerBeat
from offsets.queries.snapshots.overview import cluster_runs
from offsets.queries.snapshots.refresh_state import RefreshState


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers; it asks nothing of the database."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database answers with every migration applied, a scheduler's last round
    is recent, and no scheduled cluster's results are stale (`_late`)."""
    checks: dict[str, object] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
        checks["migrations"] = "ok" if not pending else f"{len(pending)} not applied"
        if pending:
            # The tables asked about below may not exist yet (a first start, an upgrade).
            return _answer(checks, ready=False)
        now = timezone.now()
        recent = _scheduler_recent(now)
        checks["scheduler"] = "ok" if recent else "no recent round"
        scheduled, late = _clusters_late(now)
    except DatabaseError:
        checks["database"] = "unreachable"
        return _answer(checks, ready=False)
    checks["clusters"] = {"scheduled": scheduled, "not_refreshed_in_time": late}
    return _answer(checks, ready=recent and late == 0)


def _scheduler_recent(now) -> bool:
    newest = SchedulerBeat.objects.aggregate(newest=Max("beat_at"))["newest"]
    return newest is not None and now - newest <= timedelta(
        seconds=settings.READY_SCHEDULER_SECONDS
    )


def _clusters_late(now) -> tuple[int, int]:
    """How many clusters are scheduled, and how many of them are not refreshed in time."""
    scheduled = cluster_runs(Cluster.objects.filter(refresh_every_seconds__gt=0))
    return len(scheduled), sum(_late(row.cluster, row.refresh, now) for row in scheduled)


def _late(cluster: Cluster, refresh: RefreshState, now) -> bool:
    """Stale by the rule the pages show (the cluster's period plus its last refresh's
    duration, READY_REFRESH_PERIODS times), so /readyz and the pages never disagree. A cluster
    never refreshed is judged from its creation: it was due one period after it."""
    if refresh.never_refreshed:
        turn = ClusterTurn(cluster.pk, cluster.refresh_every_seconds, cluster.created, False)
        return overdue(turn, now=now, periods=settings.READY_REFRESH_PERIODS)
    return refresh.stale


def _answer(checks: dict, *, ready: bool) -> JsonResponse:
    return JsonResponse(
        {"status": "ready" if ready else "unready", "checks": checks},
        status=200 if ready else 503,
    )


PROBES = {"/healthz": healthz, "/readyz": readyz}


def probes(get_response):
    """Answer /healthz and /readyz before any other middleware (see the module's docstring)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        probe = PROBES.get(request.path_info)
        return probe(request) if probe else get_response(request)

    return middleware
