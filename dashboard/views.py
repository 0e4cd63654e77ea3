"""The htmx pages. Views stay thin: look up, call a service, render."""

import logging

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from offsets.kafka.client import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster
from offsets.services import connect_state

logger = logging.getLogger(__name__)


def _get_cluster(name: str) -> Cluster:
    return get_object_or_404(Cluster, name=name)


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/home.html", {"clusters": Cluster.objects.all()})


@require_GET
@login_required
def connectors(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = _get_cluster(cluster_name)
    state, error = None, None
    try:
        state = connect_state.read_connect_state(cluster=cluster)
    except (KafkaUnavailable, TopicNotFound) as exc:
        logger.warning("Cannot read Connect state of %s: %s", cluster.name, exc)
        error = str(exc)
    status = 200 if error is None else 503
    return render(
        request,
        "dashboard/connectors.html",
        {"cluster": cluster, "state": state, "error": error},
        status=status,
    )
