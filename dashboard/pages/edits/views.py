"""The offset-edit pages: stage per connector, the diff, review and apply (htmx), audit, the
list of a cluster's edits. Views stay thin: look up (404), check the role (403), pass a form,
call a service. Import and export are `dashboard/pages/edits/import_export.py`."""

import logging

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.pages.edits.diffs import diff_context
from dashboard.pages.edits.forms import (
    SINK_CHOICES,
    SOURCE_CHOICES,
    STORE_CHOICES,
    CommentForm,
    OffsetsPageForm,
    PageForm,
    PrefillForm,
    SinkStageForm,
    SourceStageForm,
    StoreStageForm,
)
from dashboard.pages.errors import READING_KAFKA, refusal
from dashboard.pages.htmx import htmx_target
from offsets.domain.edits import CONNECTOR_STOPPED, check_stopped
from offsets.edits.apply import can_resume_after_apply, controlled_since
from offsets.edits.audit import audit_log
from offsets.edits.connector_control import StateNow, state_now
from offsets.edits.kinds.move.kind import can_resume_on_target
from offsets.edits.kinds.offset_changes.diff import TARGET_STATE_WARNING
from offsets.edits.kinds.offset_changes.kind import can_commit_back
from offsets.edits.kinds.sink_store.kind import editable_store
from offsets.edits.live import current_offsets
from offsets.edits.reconcile import is_stale, stale_after
from offsets.edits.restage import can_restage
from offsets.edits.roles import approves, can_control_connectors, can_stage
from offsets.edits.workflow import (
    SERVICE_ERRORS,
    ConnectorNotFound,
    EditInputError,
    OffsetChange,
    StoreChange,
    apply_edit,
    approve_edit,
    cancel_edit,
    commit_back,
    describe,
    reconcile_edit,
    reject_edit,
    restage_edit,
    resume_after_apply,
    resume_on_target,
    route_ahead,
    stage,
    stop_for_edit,
    submit_edit,
)
from offsets.kafka.errors import KafkaError
from offsets.models import AuditEvent, Cluster, OffsetEdit
from offsets.queries.clusters import cluster_for_user
from offsets.rights import grants

logger = logging.getLogger(__name__)


ACTIONS = {
    "submit": submit_edit,
    "approve": approve_edit,
    "reject": reject_edit,
    "cancel": cancel_edit,
    "apply": apply_edit,
    "reconcile": reconcile_edit,
    # Stages a new edit (its page is shown next), committing back what this one lost.
    "stage-restore": commit_back,
    # Where the lock check refused because the connector runs: stop it, then check again.
    "stop-connector": stop_for_edit,
    # An applied move: resume the connector on the cluster it moved to.
    "resume-target": resume_on_target,
    # A conflict: a new draft with the same inputs, diffed against the offsets now.
    "restage": restage_edit,
    # An applied edit whose connector is still STOPPED: start it from the new offsets.
    "resume-connector": resume_after_apply,
}
# Rows of live offsets per page of a connector's edit page.
OFFSETS_PER_PAGE = 100

# Which form fields each strategy shows (the strategy itself is chosen by the tabs).
STRATEGY_FIELDS = {
    "set": ["existing", "offset"],
    "add": ["partition", "offset"],
    "delete": ["existing"],
    "restore": ["at"],
    "earliest": ["partitions"],
    "latest": ["partitions"],
    "offset": ["partitions", "value"],
    "shift": ["partitions", "value"],
    "datetime": ["partitions", "at"],
    "duration": ["partitions", "duration"],
    "copy-group": ["partitions", "group"],
    "delete-offsets": ["partitions"],
}


def _get_edit_for_user(request: HttpRequest, cluster: Cluster, pk: int) -> OffsetEdit:
    edit = get_object_or_404(
        OffsetEdit.objects.select_related("cluster", "created_by", "approved_by", "applied_by"),
        cluster=cluster,
        pk=pk,
    )
    if not grants.sees_edit(request.user, edit):
        raise Http404("No such edit.")
    return edit


def _require_editor(request: HttpRequest, cluster: Cluster, connector: str) -> None:
    if not can_stage(request.user, cluster, connector):
        raise PermissionDenied("Staging offset edits needs the editor role.")


# --- A connector's edits: stage forms, its edits, its audit log -----------------------------


@require_http_methods(["GET", "POST"])
@login_required
def connector_edits(request: HttpRequest, cluster_name: str, connector: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector)
    if request.method == "POST":
        _require_editor(request, cluster, connector)
    listing = OffsetsPageForm(request.GET)
    shown = listing.cleaned_data if listing.is_valid() else {"q": "", "page": 1}
    # The table shows the offsets the form edits: a sink's own store's, unless its Connect
    # group is to be edited.
    into_group = (request.POST if request.method == "POST" else request.GET).get("into") == "group"
    try:
        own_store = editable_store(cluster, connector)
        from_store = own_store is not None and own_store.offsets is not None and not into_group
        current = current_offsets(
            cluster=cluster,
            connector=connector,
            query=shown["q"],
            page=shown["page"],
            per_page=OFFSETS_PER_PAGE,
            sink_committed=own_store.offsets if from_store else None,
        )
    except ConnectorNotFound as exc:
        raise Http404(exc.message) from exc
    except KafkaError as exc:
        return _page(request, cluster, connector, error=str(exc), status=exc.http_status)
    context = current.context
    form_class, strategies, store = _stage_forms(context, own_store, into_group)
    store["offsets_from"] = own_store.words if from_store and not context.is_source else ""
    strategy = _strategy(request, strategies)
    if request.method == "GET" and htmx_target(request) == "current-offsets":
        partial = {"context": context, "current": current, "q": shown["q"], "strategy": strategy}
        partial["can_stage"] = can_stage(request.user, cluster, connector)
        return render(request, "edits/connector.html#offsets", {**partial, **store})

    if request.method == "POST":
        form = form_class(request.POST, partitions=current.partitions)
        if form.is_valid() and (edit := _stage(request, cluster, connector, form, strategy)):
            return redirect("edit-detail", cluster_name=cluster.name, pk=edit.pk)
        status = 400
    else:
        form = form_class(initial=_initial(request, strategy), partitions=current.partitions)
        status = 200
    return _page(
        request,
        cluster,
        connector,
        context=context,
        current=current,
        q=shown["q"],
        form=form,
        strategies=strategies,
        strategy=strategy,
        shown_fields=[*STRATEGY_FIELDS[strategy], "comment"],
        status=status,
        **store,
        **_stop_first(request, cluster, connector, context),
    )


def _stage_forms(context, store, into_group: bool) -> tuple:
    """The stage form, its tabs, and the sink's own store if it has one: its form stages a
    store-offset edit unless `into=group` asks for Connect's group (which does not move it)."""
    if context.is_source:
        return SourceStageForm, SOURCE_CHOICES, {}
    if store is None or into_group:
        return SinkStageForm, SINK_CHOICES, {"store": store, "into_group": store is not None}
    return StoreStageForm, STORE_CHOICES, {"store": store, "into_group": False}


def _stop_first(request: HttpRequest, cluster: Cluster, connector: str, context) -> dict:
    """Whether the form says "stop it first", with a Stop button for those who may stop it.

    A running connector's offsets keep moving: an edit staged now ends in a conflict.
    """
    return {
        "stop_first": not check_stopped(context).passed,
        "can_control": can_control_connectors(request.user, cluster, connector),
    }


def _initial(request: HttpRequest, strategy: str) -> dict:
    """The stage form's first values: the tab's strategy, and the partition a row's link names."""
    prefill = PrefillForm(request.GET)
    named = {k: v for k, v in prefill.cleaned_data.items() if v} if prefill.is_valid() else {}
    return {**named, "strategy": strategy}


def _strategy(request: HttpRequest, strategies: list[tuple[str, str]]) -> str:
    """The strategy the tabs chose (posted, or in the query), else the first."""
    strategy = (request.POST if request.method == "POST" else request.GET).get("strategy")
    return strategy if strategy in dict(strategies) else strategies[0][0]


def _stage(
    request: HttpRequest, cluster: Cluster, connector: str, form, strategy: str
) -> OffsetEdit | None:
    """Stage the form's edit, or put the service's complaint on the form and return None."""
    # A sink's own store is set by a store-offset edit, with the same sink strategies.
    into = StoreChange if isinstance(form, StoreStageForm) else OffsetChange
    try:
        return stage(
            cluster=cluster,
            connector=connector,
            user=request.user,
            change=into(form.stage_request()),
            comment=form.cleaned_data.get("comment") or "",
        )
    except EditInputError as exc:
        form.add_error(_form_field(form, exc.field, strategy), exc.message)
    except KafkaError as exc:
        form.add_error(None, f"{READING_KAFKA}: {exc}")
    return None


def _page(request, cluster, connector, *, status=200, **extra) -> HttpResponse:
    return render(
        request,
        "edits/connector.html",
        {
            "cluster": cluster,
            "connector": connector,
            "edits": grants.only_visible_edits(
                request.user,
                OffsetEdit.objects.filter(cluster=cluster, connector=connector).select_related(
                    "cluster", "target_cluster", "created_by"
                )[:50],
            ),
            "audit_events": grants.only_visible_events(
                request.user, cluster, audit_log(cluster=cluster, connector=connector)
            ),
            "can_stage": can_stage(request.user, cluster, connector),
            **extra,
        },
        status=status,
    )


def _form_field(form, field: str | None, strategy: str) -> str | None:
    if field == "partition" and strategy in ("set", "delete"):
        return "existing"  # set and delete name an existing partition there
    if field in form.fields:
        return field
    return {"partition": "existing", "document": None, "as": "strategy"}.get(field or "")


# --- One edit: the diff, review and apply -----------------------------------------------------


@require_GET
@login_required
def edit_detail(request: HttpRequest, cluster_name: str, pk: int) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    edit = _get_edit_for_user(request, cluster, pk)
    listing = PageForm(request.GET)
    diff = diff_context(edit, listing.cleaned_data["page"] if listing.is_valid() else 1)
    if htmx_target(request) == "edit-diff":
        return render(request, "edits/detail.html#diff", {"cluster": cluster, "edit": edit, **diff})
    context = {**_detail_context(request, edit), **diff}
    return render(request, "edits/detail.html", context)


@require_POST
@login_required
def edit_action(request: HttpRequest, cluster_name: str, pk: int, action: str) -> HttpResponse:
    """Submit, approve, reject, cancel, apply or reconcile; htmx gets the status panel back."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    edit = _get_edit_for_user(request, cluster, pk)
    service = ACTIONS.get(action)
    if service is None:
        raise Http404(f"No action {action!r}.")
    form = CommentForm(request.POST)
    message, status = "", 200
    if not form.is_valid():
        message, status = "The comment is too long.", 400
    else:
        try:
            result = service(edit=edit, user=request.user, comment=form.cleaned_data["comment"])
        except SERVICE_ERRORS as exc:
            message, status = refusal(exc)
        else:
            if result.pk != edit.pk:  # a new edit was staged: go to it
                url = reverse("edit-detail", kwargs={"cluster_name": cluster.name, "pk": result.pk})
                if request.htmx:
                    return HttpResponse(status=204, headers={"HX-Redirect": url})
                return redirect(url)
            edit = result
    if not request.htmx and status == 200:
        return redirect("edit-detail", cluster_name=cluster.name, pk=edit.pk)
    edit.refresh_from_db()
    context = _detail_context(request, edit, action_error=message)
    if request.htmx:
        # The status panel, and beside the diff the warnings (a stop ends "stop it first")
        # and the route (a conflict's is its re-staged edit's).
        html = render_to_string("edits/detail.html#status", context, request) + "".join(
            render_to_string(f"edits/detail.html#{part}", {**context, "oob": True}, request)
            for part in ("warnings", "route")
        )
        response = HttpResponse(html, status=status)
        # The header's count of edits awaiting approval asks again.
        response["HX-Trigger"] = "edit-changed"
        return response
    context = {**context, **diff_context(edit, 1)}
    return render(request, "edits/detail.html", context, status=status)


def _buttons(user, edit: OffsetEdit, now: StateNow | None, resumable: bool) -> list:
    """The actions the edit's page offers this user now: (action, label, style)."""
    is_author = edit.created_by_id == user.pk
    state = OffsetEdit.State
    where = (edit.cluster, edit.connector)
    buttons = []
    if edit.state == state.DRAFT and is_author and can_stage(user, *where):
        buttons.append(("submit", "Submit for approval", "primary"))
    if edit.state == state.SUBMITTED and approves(user, edit) and not is_author:
        buttons.append(("approve", "Approve", "primary"))
    if _offers_stop(edit, now) and can_control_connectors(user, *where):
        buttons.append(("stop-connector", "Stop the connector", "danger"))
    if edit.state == state.APPROVED and approves(user, edit):
        buttons.append(("apply", "Apply now", "danger"))
    if is_stale(edit) and approves(user, edit):
        # Only once its apply cannot still be running (stale_after).
        buttons.append(("reconcile", "Reconcile from Kafka", "primary"))
    if edit.state in (state.SUBMITTED, state.APPROVED) and approves(user, edit) and not is_author:
        buttons.append(("reject", "Reject", "secondary"))
    if edit.is_open and ((is_author and can_stage(user, *where)) or approves(user, edit)):
        buttons.append(("cancel", "Cancel", "secondary"))
    if can_commit_back(edit) and can_stage(user, *where):
        buttons.append(("stage-restore", "Stage an edit that commits them back", "primary"))
    if can_resume_on_target(edit) and approves(user, edit):
        buttons.append(("resume-target", f"Resume on {edit.target_cluster.name}", "primary"))
    if can_restage(edit) and can_stage(user, *where):
        buttons.append(("restage", "Re-stage with the same inputs", "primary"))
    if resumable and can_control_connectors(user, *where):
        buttons.append(("resume-connector", "Resume the connector", "primary"))
    return buttons


def _detail_context(request: HttpRequest, edit: OffsetEdit, action_error: str = "") -> dict:
    user = request.user
    is_author = edit.created_by_id == user.pk
    state = OffsetEdit.State
    resumable = can_resume_after_apply(edit)
    now = _now(request, edit, resumable)
    buttons = _buttons(user, edit, now["connector_now"], resumable)
    return {
        "cluster": edit.cluster,
        "edit": edit,
        "inputs": _inputs(edit.parameters),
        "buttons": [(*button, _confirm(button[0], edit)) for button in buttons],
        "button_actions": [button[0] for button in buttons],
        "timeline": edit.audit_events.order_by("at", "id"),
        "action_error": action_error,
        # An apply that may still be running: say from when it can be reconciled.
        "reconcile_from": edit.apply_started_at + stale_after()
        if edit.state == state.APPLYING and edit.apply_started_at and not is_stale(edit)
        else None,
        "self_approval_blocked": edit.state == state.SUBMITTED
        and is_author
        and approves(user, edit),
        "still_stopped": resumable,
        "restaged_as": edit.restaged_as.first(),
        **describe(edit),
        **now,
    }


# The states whose page offers to stop or resume the connector: it says its state now.
NOW_STATES = (OffsetEdit.State.APPROVED, OffsetEdit.State.CONFLICT, OffsetEdit.State.APPLIED)


def _now(request: HttpRequest, edit: OffsetEdit, resumable: bool) -> dict:
    """What the edit's page says of now: the route an apply would take (a conflict's re-staged
    edit takes the same), the connector's state read from its worker where the page offers
    to stop or resume it, and the warnings and lock check without what no longer applies."""
    route = route_ahead(edit)
    warnings, checks = list(edit.warnings or []), list(edit.lock_checks or [])
    context = {"route": route, "connector_now": None, "warnings": warnings, "checks": checks}
    # A conflict's route is its re-staged edit's (the status panel says so).
    context["route_label"] = "Will be written" if edit.is_open else "Would be written"
    resumed = edit.audit_events.filter(action=AuditEvent.Action.RESUMED).first()  # newest
    context["resumed"] = resumed
    asks = (
        edit.state in NOW_STATES
        and edit.cluster.connect_url
        and not (edit.is_move or edit.is_removal)
        and (edit.state != OffsetEdit.State.APPLIED or resumable or resumed is not None)
    )
    if not asks:
        return context
    now = state_now(cluster=edit.cluster, connector=edit.connector, user=request.user)
    context["connector_now"] = now
    if now.stopped:
        context["warnings"] = [w for w in warnings if not w.startswith(TARGET_STATE_WARNING)]
        context["checks"] = [
            {**check, "now_stopped": True}
            if check.get("name") == CONNECTOR_STOPPED and not check.get("passed")
            else check
            for check in checks
        ]
    return context


def _confirm(action: str, edit: OffsetEdit) -> str:
    """What the browser asks before an action that writes or cannot be undone ("": nothing)."""
    if action == "apply" and edit.is_removal:
        if edit.strategy == OffsetEdit.Strategy.REMOVE:
            return "Stop and delete the connector and all these offsets now?"
        return "Delete all these offsets now?"
    target = edit.target_cluster.name if edit.target_cluster_id else ""
    return {
        "apply": "Run the lock check and write these offsets now?",
        "reconcile": "Read the offsets back from Kafka and settle this edit?",
        "resume-target": f"Resume the connector on {target}? It starts from the offsets the "
        "move wrote.",
        "stop-connector": "Stop the connector through its Connect worker (waiting up to 30 s "
        "for STOPPED), then run the lock check again?"
        if edit.state == OffsetEdit.State.APPROVED
        else "Stop the connector through its Connect worker (waiting up to 30 s for STOPPED)?",
        "resume-connector": "Resume the connector? It starts from the offsets this edit wrote.",
        "restage": f"Stage a new draft with the same inputs and cancel edit #{edit.pk}?"
        if edit.state == OffsetEdit.State.APPROVED
        else "",
        "reject": f"Reject edit #{edit.pk}? It cannot be approved or applied afterwards.",
        "cancel": f"Cancel edit #{edit.pk}? It cannot be submitted or applied afterwards.",
    }.get(action, "")


def _offers_stop(edit: OffsetEdit, now: StateNow | None) -> bool:
    """Whether the page offers to stop the connector: the last lock check failed because it
    runs, or an approved edit's worker says it is not stopped now, so that the approver
    stops it before applying rather than after an apply the lock check refuses."""
    if _connector_runs(edit):
        return True
    runs_now = now is not None and now.state is not None and not now.stopped
    return edit.state == OffsetEdit.State.APPROVED and runs_now


def _connector_runs(edit: OffsetEdit) -> bool:
    """The last lock check failed because the connector is not stopped (among any others).

    An approved edit's checks are read again after a stop; a conflict's are final, so its
    button goes once the connector was stopped from here after the conflict.
    """
    state = OffsetEdit.State
    if edit.state not in (state.APPROVED, state.CONFLICT) or not edit.cluster.connect_url:
        return False
    if not any(
        check.get("name") == CONNECTOR_STOPPED and not check.get("passed")
        for check in edit.lock_checks or []
    ):
        return False
    return edit.state == state.APPROVED or not controlled_since(
        edit, AuditEvent.Action.STOPPED, edit.finished_at or edit.updated
    )


# How many items of a list input (the partitions typed for a sink edit) the page quotes.
INPUT_ITEMS = 10


def _inputs(parameters: dict) -> list[tuple[str, object]]:
    shown = []
    for name, value in parameters.items():
        if isinstance(value, list) and len(value) > INPUT_ITEMS:
            value = [*value[:INPUT_ITEMS], f"and {len(value) - INPUT_ITEMS:,} more"]
        shown.append((name, value))
    return shown
