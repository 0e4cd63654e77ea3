"""One connector's page: its facts, charts and partitions from the last refresh, and its
offsets as a KIP-875 download. Views stay thin: check access, validate input, call a service,
render.

Each part that changes with a refresh polls on its own (`HX-Target` names it) and is rendered
from fragments cached per refresh run (`dashboard/pages/cache.py`).
"""

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Page
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.pages import cache as page_cache
from dashboard.pages.connector import actions, chart_ranges
from dashboard.pages.connector.charts import history_charts, partition_progress
from dashboard.pages.connector.store_hints import store_hint
from dashboard.pages.edits.moves import move_targets
from dashboard.pages.formatting import AgedHtml, attachment
from dashboard.pages.forms import PartitionFilterForm
from dashboard.pages.htmx import htmx_target, poll_seconds
from offsets.domain.connectors import mask_secrets
from offsets.domain.download_names import export_name
from offsets.domain.mirrors import suggested_upstream
from offsets.edits.roles import can_control_connectors, can_stage
from offsets.formats import jackson
from offsets.models import Cluster, ConnectorSnapshot
from offsets.queries import next_records, snapshots
from offsets.queries.clusters import cluster_for_user, hide_unseen_upstreams
from offsets.rights import gate
from offsets.rights.grants import visible_clusters

PARTITIONS_PER_PAGE = 50
# A partitions search that keeps fewer than this many is counted from its keys (one scan).
SEARCH_PROBE = 1000
# The connector page's polled parts drawn from its cached fragments: {element id: partial}.
# The facts carry the refresh's state and the tasks too: one poll for what is wrong now.
POLLED_FIGURES = {"facts": "facts", "history-charts": "history"}


def _get_connector_for_user(
    request: HttpRequest, cluster_name: str, name: str
) -> ConnectorSnapshot:
    """Return the connector's snapshot, its cluster in `.cluster`; 404 if either is unknown."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=name)
    snapshot = snapshots.connector_of(cluster, name)
    if snapshot is None:
        raise Http404(gate.unknown_connector(cluster, name))
    snapshot.cluster = cluster  # read once, by the grants' lookup
    snapshots.with_partition_status([snapshot], cluster=cluster)
    return snapshot


def _get_cached_connector_for_user(
    request: HttpRequest, cluster: Cluster, run: int, name: str
) -> ConnectorSnapshot:
    """Return the connector's snapshot from run `run` of `cluster` (cached: only a refresh
    writes snapshots); 404 if it has none. Its partition status is not read."""
    snapshot = page_cache.get_or_compute(
        cluster, run, "connector", {"name": name}, lambda: snapshots.connector_of(cluster, name)
    )
    if snapshot is None:
        raise Http404(gate.unknown_connector(cluster, name))
    # The cluster as read now: its settings change without a refresh.
    snapshot.cluster = cluster
    return snapshot


@require_GET
@login_required
def connector_detail(request: HttpRequest, cluster_name: str, connector_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    target = htmx_target(request)
    # The whole page shows the refresh state: read it first, it names the cached run too.
    refresh = (
        None if target in ("progress", "partitions") else snapshots.refresh_state(cluster=cluster)
    )
    run = page_cache.generation(cluster, refresh)
    snapshot = _get_cached_connector_for_user(request, cluster, run, connector_name)
    form = PartitionFilterForm(request.GET, connector_type=snapshot.type)
    if not form.is_valid():
        return render(
            request,
            "dashboard/connector.html",
            {"cluster": cluster, "connector": snapshot, "form": form},
            status=400,
        )
    cached = _ConnectorCache(cluster, snapshot, run)
    # A range not offered falls back to the default: no error page for a stale bookmark.
    span = chart_ranges.chart_range(request.GET.get("range"))
    # Every part that changes with a refresh polls on its own (facts, charts, partitions).
    poll = poll_seconds(refresh is not None and refresh.running is not None)
    if target == "progress":
        context = _progress_context(cached, form.cleaned_data["partition"], span)
        context["poll_seconds"] = poll
        return render(request, "dashboard/connector.html#progress", context)
    if target == "control-buttons":
        return _control_buttons(request, cached, run, poll)
    if target in POLLED_FIGURES:
        context = {
            "cluster": cluster,
            "poll_seconds": poll,
            "refresh": refresh,
            **_figures(cached, request.user, span),
        }
        return render(request, f"dashboard/connector.html#{POLLED_FIGURES[target]}", context)
    context = _partitions_context(cached, form, poll)
    if target == "partitions":
        return render(request, "dashboard/connector.html#partitions", context)
    context.update(_whole_page_context(request, cached, form, refresh, span))
    return render(request, "dashboard/connector.html", context)


def _control_buttons(
    request: HttpRequest, cached: "_ConnectorCache", run: int, poll: int
) -> HttpResponse:
    """The control card's buttons for its poll: 204 (nothing to swap) while the refresh on
    show is the one the card was drawn from, or offers the same buttons. A card drawn after
    a control shows what the worker reported: only a newer refresh may change its buttons."""
    cluster, snapshot = cached.cluster, cached.snapshot
    offered = actions.offered(
        target_state=snapshot.target_state,
        runtime_state=snapshot.runtime_state,
        deleted=snapshot.deleted,
    )
    if request.GET.get("run") == str(run) or request.GET.get("shown") == " ".join(offered):
        return HttpResponse(status=204)
    context = {
        "cluster": cluster,
        "connector_name": snapshot.name,
        "can_control": bool(cluster.connect_url)
        and can_control_connectors(request.user, cluster, snapshot.name),
        "actions": offered,
        "control_run": run,
        "poll_seconds": poll,
    }
    return render(request, "dashboard/_connector_control.html#buttons", context)


def _partitions_context(
    cached: "_ConnectorCache", form: PartitionFilterForm, poll: int
) -> dict[str, object]:
    """The context of the partitions table, which the whole page shows too."""
    snapshot = cached.snapshot
    partitions, partition_rows = _partitions_page(cached, form)
    return {
        "cluster": cached.cluster,
        "connector": snapshot,
        "form": form,
        "poll_seconds": poll,
        "sort": form.cleaned_data["sort"],
        "partitions": partitions,
        "partition_rows": partition_rows.render(timezone.now()),
        # Tombstoned partitions are listed (their history stays) but not counted as live.
        "tombstoned": max(0, partitions.paginator.count - snapshot.partitions)
        if snapshot.type == "source"
        else 0,
    }


def _whole_page_context(
    request: HttpRequest,
    cached: "_ConnectorCache",
    form: PartitionFilterForm,
    refresh: snapshots.RefreshState | None,
    span: chart_ranges.ChartRange,
) -> dict[str, object]:
    """What the whole page adds to the partitions: the refresh, the controls, the figures."""
    cluster, snapshot = cached.cluster, cached.snapshot
    # The user's grants are read once per request (cached on the user).
    name = snapshot.name
    can_control = bool(cluster.connect_url) and can_control_connectors(request.user, cluster, name)
    # Deleting needs the worker; cleaning up a deleted one's offsets does not.
    can_remove = (can_control or snapshot.deleted) and can_stage(request.user, cluster, name)
    context = {
        "refresh": refresh,
        "can_control": can_control,
        "can_remove": can_remove,
        "actions": actions.offered(
            target_state=snapshot.target_state,
            runtime_state=snapshot.runtime_state,
            deleted=snapshot.deleted,
        ),
        # Offered only when the move page would have a target to offer.
        "can_move": can_control
        and not snapshot.deleted
        and can_stage(request.user, cluster, name)
        and bool(move_targets(request.user, cluster, name)),
        "newer_not_stored": cached.get(
            "newer-not-stored",
            {},
            lambda: snapshots.newer_offsets_not_stored(cluster=cluster, snapshot=snapshot),
        ),
        **_figures(cached, request.user, span),
        "control_run": cached.run,
        # A stuck sink offers its next records, read when asked (not on every poll).
        "stuck_sink": next_records.is_stuck(snapshot, {snapshot.worst_partition_status}),
        "show_records": request.GET.get("records") == "show",
        "chart_ranges": chart_ranges.RANGES,
        "chart_range": span,
    }
    if snapshot.type == "source":
        if form.cleaned_data["partition"]:
            # A link followed without htmx: draw the chosen partition's chart in the page.
            context.update(_progress_context(cached, form.cleaned_data["partition"], span))
        else:
            context["progress_deferred"] = True
    return context


class _ConnectorCache:
    """A connector's refresh-derived values, cached until the cluster's next finished run."""

    def __init__(self, cluster: Cluster, snapshot: ConnectorSnapshot, run: int) -> None:
        self.cluster = cluster
        self.snapshot = snapshot
        self.run = run

    def get[T](self, kind: str, params: dict[str, object], compute: Callable[[], T]) -> T:
        params = {"connector": self.snapshot.name, "type": self.snapshot.type, **params}
        return page_cache.get_or_compute(self.cluster, self.run, kind, params, compute)


def _figures(cached: _ConnectorCache, user, span: chart_ranges.ChartRange) -> dict[str, object]:
    """The context of the page's parts drawn from the run's results: the connector with its
    status reasons and the rendered fragments (`_fragments`)."""
    # A mirror's upstream cluster, and its lag measured there, are shown only to a user whose
    # grants cover that cluster: for the others it is named nowhere.
    hide_unseen_upstreams(user, [cached.snapshot])
    # Linked only when it is a registered cluster: a name no cluster has would link to a 404.
    upstream = cached.snapshot.upstream_cluster
    upstream_visible = bool(upstream) and visible_clusters(user).filter(name=upstream).exists()
    fragments = dict(_fragments(cached, upstream_visible, span))
    # The partitions' worst status (a sink's reasons) changes with a refresh only: cached too.
    cached.snapshot.worst_partition_status = fragments.pop("worst_partition_status")
    cached.snapshot.reasons = snapshots.status_reasons(cached.snapshot)
    return {
        "connector": cached.snapshot,
        "upstream_hint": _upstream_hint(user, cached.cluster, cached.snapshot),
        "upstream_visible": upstream_visible,
        "access_contact": settings.ACCESS_CONTACT,
        **fragments,
        "store_hint": store_hint(cached.cluster, cached.snapshot),
    }


def _upstream_hint(user, cluster: Cluster, snapshot: ConnectorSnapshot) -> dict[str, object] | None:
    """For a mirror without an upstream cluster: the admin's form to choose one, with the
    registered cluster its `source.cluster.bootstrap.servers` names filled in if any (of those
    the user sees)."""
    chosen = snapshot.upstream_cluster or snapshot.upstream_hidden
    if not snapshot.mirror_source or chosen or snapshot.deleted:
        return None
    registered = list(
        visible_clusters(user).order_by("name").values_list("pk", "name", "bootstrap_servers")
    )
    suggested = suggested_upstream(
        snapshot.config, [(name, servers) for _, name, servers in registered]
    )
    initial = {"cluster": cluster.pk, "source_alias": snapshot.source_alias}
    if suggested is not None:
        initial["upstream"] = next(pk for pk, name, _ in registered if name == suggested)
    return {
        "suggested": suggested,
        "add_url": f"{reverse('admin:offsets_mirrorupstream_add')}?{urlencode(initial)}",
    }


def _fragments(
    cached: _ConnectorCache, upstream_visible: bool, span: chart_ranges.ChartRange
) -> dict[str, object]:
    """The parts of a connector's page drawn from one refresh run's results, rendered once
    per run: its charts, rewinds and key drift, tasks and configuration.

    Their HTML is cached rather than the values they show: a chart's ticks and a table's
    cells cost hundreds of template nodes a request. Nothing in them depends on the time of
    the request or on the user.
    """
    cluster, snapshot = cached.cluster, cached.snapshot

    def compute() -> dict[str, object]:
        context: dict[str, object] = {
            "connector": snapshot,
            "cluster": cluster,
            "config": sorted(mask_secrets(snapshot.config).items()),
            "tasks": snapshot.tasks(),
            "upstream_visible": upstream_visible,
            "chart_range": span,
            # The range ends at the refresh the page shows, as the rest of it does.
            **history_charts(cluster, snapshot, span),
        }
        if snapshot.type == "source":
            context["rewinds"] = snapshots.rewinds(cluster=cluster, connector=snapshot.name)
            context["drifts"] = snapshots.key_drifts(cluster=cluster, connector=snapshot.name)
        if snapshot.upstream_cluster:
            context.update(_upstream_lags(cluster, snapshot))
        worst = None
        if snapshot.type == "sink" or snapshot.upstream_cluster:
            snapshots.with_partition_status([snapshot], cluster=cluster)
            worst = snapshot.worst_partition_status
        return {
            name: render_to_string(f"dashboard/connector.html#{name}", context)
            for name in (
                "history_charts",
                "upstream_section",
                "rewinds_section",
                "tasks_section",
                "config_section",
            )
        } | {"worst_partition_status": worst}

    # A hidden upstream's fragments are drawn without it: an entry of their own.
    entry = {"upstream_visible": upstream_visible, "upstream_hidden": snapshot.upstream_hidden}
    return cached.get("fragments", {**entry, "range": span.key}, compute)


def _partitions_page(cached: _ConnectorCache, form: PartitionFilterForm) -> tuple[Page, AgedHtml]:
    """The page of partitions asked for and its rows' HTML, cached until the next refresh."""
    cluster, snapshot = cached.cluster, cached.snapshot

    def compute() -> tuple[AgedHtml, int, int]:
        if snapshot.type == "sink":
            page, html = _sink_partition_rows(cluster, snapshot, form)
        else:
            page, html = _source_partition_rows(cluster, snapshot, form)
        return AgedHtml.from_html(html), page.paginator.count, page.number

    params = {key: form.cleaned_data[key] for key in ("q", "sort", "page")}
    # What the rows show beside the partitions: links under the cluster's name, the worker's
    # offsets topic (not marked), whether lag is tracked. Cluster settings change without a
    # refresh, so they name the entry.
    params.update(
        cluster=cluster.name,
        offsets_topic=cluster.offsets_topic,
        external=snapshot.offsets_managed_externally,
    )
    html, count, number = cached.get("partitions", params, compute)
    return page_cache.page_of([], count, number, PARTITIONS_PER_PAGE), html


def _sink_partition_rows(
    cluster: Cluster, snapshot: ConnectorSnapshot, form: PartitionFilterForm
) -> tuple[Page, str]:
    rows = snapshots.sink_partitions(
        cluster=cluster,
        connector=snapshot.name,
        q=form.cleaned_data["q"],
        sort=form.cleaned_data["sort"],
    )
    page = snapshots.paginate(rows, form.cleaned_data["page"], PARTITIONS_PER_PAGE)
    html = render_to_string(
        "dashboard/rows/sink_partitions.html",
        {
            "lags": page.object_list,
            "externally_managed": snapshot.offsets_managed_externally,
            "paused": snapshot.paused_by_owner,
        },
    )
    return page, html


def _source_partition_rows(
    cluster: Cluster, snapshot: ConnectorSnapshot, form: PartitionFilterForm
) -> tuple[Page, str]:
    rows = snapshots.source_partitions(
        cluster=cluster,
        connector=snapshot.name,
        q=form.cleaned_data["q"],
        sort=form.cleaned_data["sort"],
    )
    # A search keeps a few partitions, usually: counted from the keys it finds.
    page = snapshots.paginate(
        rows,
        form.cleaned_data["page"],
        PARTITIONS_PER_PAGE,
        by_keys=True,
        probe=SEARCH_PROBE if form.cleaned_data["q"] else 0,
    )
    html = render_to_string(
        "dashboard/rows/source_partitions.html",
        {
            "offsets": snapshots.with_position_ages(
                page.object_list, connector_class=snapshot.connector_class
            ),
            "connector_url": reverse("connector", args=[cluster.name, snapshot.name]),
            "worker_topic": cluster.offsets_topic,
        },
    )
    return page, html


def _upstream_lags(cluster: Cluster, snapshot: ConnectorSnapshot) -> dict[str, object]:
    """A mirror's most lagging upstream partitions (the API lists every one)."""
    rows = snapshots.sink_partitions(cluster=cluster, connector=snapshot.name, sort="-lag_records")
    shown = list(rows[:PARTITIONS_PER_PAGE])
    return {
        "upstream_rows": render_to_string(
            "dashboard/rows/sink_partitions.html",
            {"lags": shown, "paused": snapshot.paused_by_owner},
        ),
        "upstream_count": rows.count() if len(shown) == PARTITIONS_PER_PAGE else len(shown),
        "upstream_shown": len(shown),
    }


def _progress_context(
    cached: _ConnectorCache, key_hash: str, span: chart_ranges.ChartRange
) -> dict:
    """The chosen partition's committed offsets over the chosen range, rewinds marked."""
    cluster, snapshot = cached.cluster, cached.snapshot
    context = {"cluster": cluster, "connector": snapshot, "chart_range": span}
    context.update(
        cached.get(
            "progress",
            {"partition": key_hash, "range": span.key},
            lambda: partition_progress(
                cluster, snapshot, key_hash, span.since(snapshot.updated_at)
            ),
        )
    )
    return context


@require_GET
@login_required
def connector_offsets_json(
    request: HttpRequest, cluster_name: str, connector_name: str
) -> HttpResponse:
    """Download the connector's offsets as KIP-875 JSON (what PATCH /offsets accepts)."""
    snapshot = _get_connector_for_user(request, cluster_name, connector_name)
    cluster = snapshot.cluster
    document = snapshots.export_document(cluster=cluster, snapshot=snapshot)
    response = HttpResponse(
        jackson.dumps_text(document, indent=2) + "\n",
        content_type="application/json; charset=utf-8",
    )
    name = export_name(
        cluster.name, [snapshot.name], history=False, configmap=False, at=timezone.now()
    )
    response["Content-Disposition"] = attachment(name)
    if not_stored := snapshots.newer_offsets_not_stored(cluster=cluster, snapshot=snapshot):
        response[snapshots.NOT_CURRENT_HEADER] = str(not_stored)
    return response
