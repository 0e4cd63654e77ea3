"""Probes for an orchestrator: /healthz (the process answers) and /readyz (it can serve).

Both answer JSON without a login and name no cluster, connector or setting: they are reached
by anyone who can reach the port.
"""

from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Max, Q
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from offsets.models import Cluster, SchedulerBeat
from offsets.refresh.schedule import ClusterTurn, overdue


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The process answers; it asks nothing of the database."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database answers with every migration applied, a scheduler's last round
    is recent, and every scheduled cluster's last successful refresh is within
    READY_REFRESH_PERIODS of its period (a cluster added since is judged from its creation)."""
    checks: dict[str, object] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except DatabaseError:
        checks["database"] = "unreachable"
        return _answer(checks, ready=False)
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    checks["migrations"] = "ok" if not pending else f"{len(pending)} not applied"
    now = timezone.now()
    newest = SchedulerBeat.objects.aggregate(newest=Max("beat_at"))["newest"]
    recent = newest is not None and now - newest <= timedelta(
        seconds=settings.READY_SCHEDULER_SECONDS
    )
    checks["scheduler"] = "ok" if recent else "no recent round"
    scheduled = Cluster.objects.filter(refresh_every_seconds__gt=0).annotate(
        last_success=Max("refresh_runs__finished_at", filter=Q(refresh_runs__status="succeeded"))
    )
    late = sum(
        overdue(
            ClusterTurn(
                cluster_id=cluster.pk,
                every_seconds=cluster.refresh_every_seconds,
                last_started=cluster.last_success or cluster.created,
                running=False,
            ),
            now=now,
            periods=settings.READY_REFRESH_PERIODS,
        )
        for cluster in scheduled
    )
    checks["clusters"] = {"scheduled": len(scheduled), "not_refreshed_in_time": late}
    ready = not pending and recent and late == 0
    return _answer(checks, ready=ready)


def _answer(checks: dict, *, ready: bool) -> JsonResponse:
    return JsonResponse(
        {"status": "ready" if ready else "unready", "checks": checks},
        status=200 if ready else 503,
    )
