"""The htmx pages of the clusters and their connectors. Views stay thin: check access,
validate input, call a service, render.

Each page is one view and one template; an htmx request gets only the partial it targets
(`HX-Target` names the element), so polling and paging move no more HTML than they need.
One connector's page is `dashboard/pages/connector/views.py`.
"""

import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Page
from django.db.models import Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from django.views.defaults import page_not_found

from dashboard.pages import cache as page_cache
from dashboard.pages.formatting import AgedHtml
from dashboard.pages.forms import ConnectorFilterForm, RefreshForm
from dashboard.pages.htmx import htmx_target, poll_seconds
from offsets import connect_state
from offsets.domain.rights import REFRESH_ROLE, WHOLE_CLUSTER, Action
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster
from offsets.queries import snapshots
from offsets.queries.clusters import (
    cluster_for_user,
    hide_upstream,
    state_for_user,
    unseen_upstreams,
)
from offsets.refresh import background
from offsets.rights.grants import connector_filter, has_any_grant, may, visible_clusters

logger = logging.getLogger(__name__)

CONNECTORS_PER_PAGE = 50


# -------------------------------------------------------------------------------------------
# Clusters overview and starting a refresh.


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    return _render_home(request)


def _render_home(request: HttpRequest, notice: str = "") -> HttpResponse:
    runs = snapshots.cluster_runs(visible_clusters(request.user))
    # The connector counts change only when a run finishes: cached per cluster and run. While
    # a cluster's refresh runs, which run is on show takes a query of its own to tell
    # (page_cache.generation): its counts are then read afresh, as the page polls anyway.
    finished = {row.cluster: row.refresh.last_run for row in runs if _finished(row.refresh)}
    counts = page_cache.get_many_or_compute(
        {cluster: run.pk for cluster, run in finished.items()},
        "overview",
        lambda clusters: snapshots.connector_counts([cluster.pk for cluster in clusters]),
    )
    others = [row.cluster.pk for row in runs if row.cluster not in finished]
    if others:
        counts.update(snapshots.connector_counts(others))
    # A user granted some connectors of a cluster counts only those (never cached: per user).
    for row in runs:
        only = connector_filter(request.user, row.cluster)
        if only is not None:
            counts.update(snapshots.connector_counts([row.cluster.pk], only))
    summaries = snapshots.summarize(runs, counts)
    refreshing = any(summary.refresh.running for summary in summaries)
    context = {
        "summaries": summaries,
        "notice": notice,
        "poll_seconds": poll_seconds(refreshing),
        "can_refresh": {
            row.cluster.pk for row in runs if may(request.user, Action.REFRESH, row.cluster)
        },
        "no_grant": not has_any_grant(request.user),
        "access_contact": settings.ACCESS_CONTACT,
    }
    template = "dashboard/home.html#clusters" if request.htmx else "dashboard/home.html"
    return render(request, template, context)


def _finished(refresh: snapshots.RefreshState) -> bool:
    """Whether the cluster's latest run has finished: its id then names the results shown."""
    return refresh.last_run is not None and refresh.last_run.finished_at is not None


@require_POST
@login_required
def start_refresh(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    # Running Spark over a cluster's topics loads its brokers: a right of its own.
    if not may(request.user, Action.REFRESH, cluster, WHOLE_CLUSTER):
        raise PermissionDenied(REFRESH_ROLE)
    form = RefreshForm(request.POST, host=request.get_host())
    if not form.is_valid():
        return HttpResponse(form.errors.as_text(), status=400, content_type="text/plain")
    run = background.start_refresh(cluster=cluster, full=form.cleaned_data["full"])
    if run is None:
        running = background.running_refresh(cluster=cluster)
        notice = (
            background.AlreadyRunning(running).message
            if running
            else f"A refresh of {cluster.name} has just finished; start another if needed."
        )
    elif run.status == run.Status.FAILED:
        notice = f"The refresh of {cluster.name} could not start: {run.error}"
    else:
        notice = f"Refresh of {cluster.name} started."
    if request.htmx:
        # htmx swaps only 2xx answers: the notice says what happened.
        return _render_home(request, notice=notice)
    messages.info(request, notice)
    return HttpResponseRedirect(form.cleaned_data["next"] or reverse("home"))


# -------------------------------------------------------------------------------------------
# Connectors of a cluster (from the last refresh).


@require_GET
@login_required
def cluster(request: HttpRequest, cluster_name: str) -> HttpResponse:
    """A cluster's own URL leads to its connectors; one the user may not see answers 404."""
    found = cluster_for_user(user=request.user, name=cluster_name)
    return HttpResponseRedirect(reverse("connectors", args=[found.name]))


@require_GET
@login_required
def connectors(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    form = ConnectorFilterForm(request.GET)
    refresh = snapshots.refresh_state(cluster=cluster)
    context = {
        "cluster": cluster,
        "form": form,
        "refresh": refresh,
        "poll_seconds": poll_seconds(refresh.running is not None),
        "can_refresh": may(request.user, Action.REFRESH, cluster, WHOLE_CLUSTER),
        "export_url": reverse("edits-export", args=[cluster.name]),
    }
    status = 200
    if form.is_valid():
        only = connector_filter(request.user, cluster)
        hidden = unseen_upstreams(request.user, snapshots.mirrors(cluster=cluster))
        page, rows = _connectors_page(
            cluster, form, refresh, export_url=context["export_url"], only=only, hidden=hidden
        )
        context.update(page=page, rows=rows.render(timezone.now()), sort=form.cleaned_data["sort"])
    else:
        status = 400
    partial = "#table" if htmx_target(request) == "connectors-table" else ""
    return render(request, f"dashboard/connectors.html{partial}", context, status=status)


def _connectors_page(
    cluster: Cluster,
    form: ConnectorFilterForm,
    refresh: snapshots.RefreshState,
    *,
    export_url: str,
    only: Q | None,
    hidden: set[str],
) -> tuple[Page, AgedHtml]:
    """The page of connectors the filters ask for and its rows' HTML, cached until the next
    refresh finishes (the rows, not the model instances: unpickling 50 of those cost more)."""

    def compute() -> tuple[AgedHtml, int, int]:
        rows = snapshots.connectors(cluster=cluster, **form.filters())
        if only is not None:
            rows = rows.filter(only)
        page = snapshots.paginate(rows, form.cleaned_data["page"], CONNECTORS_PER_PAGE)
        for snapshot in page.object_list:
            if snapshot.upstream_cluster in hidden:
                hide_upstream(snapshot)
        snapshots.with_partition_status(page.object_list, cluster=cluster)
        for snapshot in page.object_list:
            snapshot.reasons = snapshots.status_reasons(snapshot)
        html = render_to_string(
            "dashboard/rows/connectors.html",
            {
                "snapshots": page.object_list,
                "base_url": reverse("connectors", args=[cluster.name]),
                "export_url": export_url,
            },
        )
        return AgedHtml.from_html(html), page.paginator.count, page.number

    # The name too: the rows' links carry it, and a renamed cluster keeps its key.
    params = {**form.filters(), "page": form.cleaned_data["page"], "cluster": cluster.name}
    if only is not None:
        params["only"] = str(only)  # a user's grants: their own entry
    if hidden:
        params["hidden_upstreams"] = sorted(hidden)  # likewise
    run = page_cache.generation(cluster, refresh)
    html, count, number = page_cache.get_or_compute(cluster, run, "connectors", params, compute)
    return page_cache.page_of([], count, number, CONNECTORS_PER_PAGE), html


# -------------------------------------------------------------------------------------------
# Live state, read from the config and status topics on each request.


@require_GET
@login_required
def live_state(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    state, error, status = None, None, 200
    try:
        state = connect_state.read_connect_state(cluster=cluster)
    except KafkaError as exc:
        logger.warning("Cannot read Connect state of %s: %s", cluster.name, exc)
        error, status = str(exc), exc.http_status
    if state is not None:
        state = state_for_user(request.user, cluster, state)
    return render(
        request,
        "dashboard/live.html",
        {"cluster": cluster, "state": state, "error": error},
        status=status,
    )


# -------------------------------------------------------------------------------------------
# Errors outside any view.


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 for a URL no pattern matches: JSON under /api/ (as every API error is), else the page.

    `/api/v1/edits/abc/` never reaches DRF (`<int:pk>` does not match), so without this an API
    client would get an HTML page where its schema promises `{"detail": ...}`.
    """
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
