"""Stop, resume and restart a connector from its page, and show a cluster's Connect worker.

Thin views: look up (404), check the role (403), pass a form, call the service in
`offsets.edits.connector_control`; htmx gets the control card back.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard import actions
from dashboard.errors import refusal
from dashboard.move_views import move_targets
from offsets.edits.connector_control import ACTIONS, control_connector
from offsets.edits.errors import EditForbidden
from offsets.edits.roles import can_control_connectors, can_stage
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError
from offsets.services.clusters import cluster_for_user


class ControlForm(forms.Form):
    comment = forms.CharField(required=False, max_length=2000)
    include_tasks = forms.BooleanField(required=False)


@require_POST
@login_required
def connector_control(
    request: HttpRequest, cluster_name: str, connector_name: str, action: str
) -> HttpResponse:
    """Stop (waiting for STOPPED), resume or restart; htmx gets the control card back."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    if action not in ACTIONS:
        raise Http404(f"No action {action!r}.")
    if not can_control_connectors(request.user, cluster, connector_name):
        raise PermissionDenied("Stopping, resuming and restarting needs the editor role.")
    form = ControlForm(request.POST)
    outcome, error, status = None, "", 200
    if not form.is_valid():
        error, status = "The comment is too long.", 400
    else:
        try:
            outcome = control_connector(
                cluster=cluster,
                connector=connector_name,
                action=action,
                user=request.user,
                comment=form.cleaned_data["comment"],
                include_tasks=form.cleaned_data["include_tasks"],
            )
        except EditForbidden as exc:
            raise PermissionDenied(exc.message) from exc
        except ConnectRestError as exc:
            error, status = refusal(exc, worker="")
    if not request.htmx:
        if outcome is not None and outcome.ok:
            messages.success(request, outcome.message)
        else:
            messages.error(request, outcome.message if outcome else error)
        return redirect("connector", cluster_name=cluster.name, connector_name=connector_name)
    context = {
        "cluster": cluster,
        "connector_name": connector_name,
        "can_control": True,
        "outcome": outcome,
        "control_error": error,
        # What the worker just reported decides the buttons; no report, every button.
        "actions": actions.offered(
            target_state=None, runtime_state=outcome.state if outcome else None, deleted=False
        ),
        "can_move": can_stage(request.user, cluster, connector_name)
        and bool(move_targets(request.user, cluster, connector_name)),
    }
    return render(request, "dashboard/_connector_control.html", context, status=status)


@require_GET
@login_required
def cluster_worker(request: HttpRequest, cluster_name: str) -> HttpResponse:
    """The cluster's Connect worker: version, commit and the REST features it supports."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    info, error = None, ""
    if cluster.connect_url:
        try:
            info = ConnectRest.for_cluster(cluster, timeout=10).worker_info()
        except ConnectRestError as exc:
            error = exc.message
    template = "dashboard/_worker.html" if request.htmx else "dashboard/worker.html"
    return render(request, template, {"cluster": cluster, "info": info, "error": error})
