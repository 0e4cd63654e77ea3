"""Stop, pause, resume and restart a connector (or one task) from its page, follow a
restart until it settles, and show a cluster's Connect worker.

Thin views: look up (404), check the role (403), pass a form, call the service in
`offsets.edits.connector_control`; htmx gets the control card back, and after a restart the
card's outcome polls `connector_control_follow` until the restart ran steadily, failed again
or the bound passed.
"""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from dashboard.pages import cache as page_cache
from dashboard.pages.connector import actions
from dashboard.pages.edits.moves import move_targets
from dashboard.pages.errors import refusal
from dashboard.pages.htmx import poll_seconds
from offsets.edits.connector_control import (
    ACTIONS,
    Following,
    control_connector,
    follow_restart,
)
from offsets.edits.errors import EditForbidden
from offsets.edits.roles import can_control_connectors, can_stage
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError
from offsets.queries.clusters import cluster_for_user


class ControlForm(forms.Form):
    comment = forms.CharField(required=False, max_length=2000)
    include_tasks = forms.BooleanField(required=False)
    # With include_tasks: restart only what FAILED (Connect's onlyFailed).
    only_failed = forms.BooleanField(required=False)
    # restart-task: which task (Connect numbers them from 0).
    task = forms.IntegerField(required=False, min_value=0, max_value=100_000)
    # The page to go back to (the stage form's "stop first"), instead of the connector's.
    next = forms.CharField(required=False, max_length=2000)

    def clean_next(self) -> str:
        url = self.cleaned_data["next"]
        return url if url and url_has_allowed_host_and_scheme(url, allowed_hosts=None) else ""


class FollowForm(forms.Form):
    """A restart being followed, as the card's poll sends it back (times in epoch seconds)."""

    started = forms.FloatField(min_value=0)
    tasks_restarted = forms.BooleanField(required=False)
    task = forms.IntegerField(required=False, min_value=0, max_value=100_000)
    running_since = forms.FloatField(required=False, min_value=0)


@require_POST
@login_required
def connector_control(
    request: HttpRequest, cluster_name: str, connector_name: str, action: str
) -> HttpResponse:
    """Stop (waiting for STOPPED), pause, resume, restart the connector or one task; htmx
    gets the control card back."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    if action not in ACTIONS:
        raise Http404(f"No action {action!r}.")
    if not can_control_connectors(request.user, cluster, connector_name):
        raise PermissionDenied(
            "Stopping, pausing, resuming and restarting needs the editor or approver role."
        )
    form = ControlForm(request.POST)
    outcome, error, status = None, "", 200
    if not form.is_valid():
        error, status = "The comment is too long, or the task is not a task number.", 400
    elif action == "restart-task" and form.cleaned_data["task"] is None:
        error, status = "Say which task to restart (its number, from 0).", 400
    else:
        try:
            outcome = control_connector(
                cluster=cluster,
                connector=connector_name,
                action=action,
                user=request.user,
                comment=form.cleaned_data["comment"],
                include_tasks=form.cleaned_data["include_tasks"],
                only_failed=form.cleaned_data["only_failed"],
                task=form.cleaned_data["task"] if action == "restart-task" else None,
                # The card polls a restart (no request held for seconds); a page without
                # htmx waits for the verdict to say it on the next page.
                follow=not request.htmx or bool(form.cleaned_data["next"]),
            )
        except EditForbidden as exc:
            raise PermissionDenied(exc.message) from exc
        except ConnectRestError as exc:
            error, status = refusal(exc, worker="")
    back = form.cleaned_data.get("next", "") if form.is_valid() else ""
    if not request.htmx or back:
        _flash(request, outcome, error)
        url = back or reverse("connector", args=[cluster.name, connector_name])
        if request.htmx:
            return HttpResponse(status=204, headers={"HX-Redirect": url})
        return redirect(url)
    context = _card_context(request, cluster, connector_name, outcome, error)
    return render(request, "dashboard/_connector_control.html", context, status=status)


@require_GET
@login_required
def connector_control_follow(
    request: HttpRequest, cluster_name: str, connector_name: str
) -> HttpResponse:
    """The card's outcome after a restart, read again: it polls until the verdict is final."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    form = FollowForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Not a restart to follow.", status=400, content_type="text/plain")
    following = Following(**form.cleaned_data)
    outcome, error = None, ""
    try:
        outcome = follow_restart(
            cluster=cluster, connector=connector_name, user=request.user, following=following
        )
    except EditForbidden as exc:
        raise PermissionDenied(exc.message) from exc
    except ConnectRestError as exc:
        error, _ = refusal(exc, worker="")
    context = {"cluster": cluster, "connector_name": connector_name, "outcome": outcome}
    return render(
        request, "dashboard/_connector_control.html#outcome", {**context, "follow_error": error}
    )


def _card_context(request: HttpRequest, cluster, connector_name: str, outcome, error: str) -> dict:
    """The control card after a control: the worker's answer, and the buttons it offers."""
    return {
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
        # The buttons keep following the state, from the refresh on show now (their poll).
        "control_run": page_cache.generation(cluster),
        "poll_seconds": poll_seconds(False),
    }


def _flash(request: HttpRequest, outcome, error: str) -> None:
    """Say how it went on the next page: a success, a warning (failed again), or the error."""
    if outcome is not None and outcome.warning:
        messages.warning(request, outcome.message)
    elif outcome is not None and outcome.ok:
        messages.success(request, outcome.message)
    else:
        messages.error(request, outcome.message if outcome else error)


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
