"""A stuck sink's next records (an htmx partial, read on request, never during a poll), and
"Skip this record", which stages an edit moving one partition past the record and lands on the
edit's page. Thin: look up (404), ask the services, render.
"""

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard.pages.errors import READING_KAFKA, refusal
from offsets.domain.rights import Action
from offsets.edits.roles import can_stage
from offsets.edits.skip import stage_skip
from offsets.edits.workflow import SERVICE_ERRORS, EditForbidden
from offsets.queries import next_records as records
from offsets.queries import snapshots
from offsets.queries.clusters import cluster_for_user
from offsets.rights import gate


class SkipForm(forms.Form):
    topic = forms.CharField(max_length=249)
    partition = forms.IntegerField(min_value=0)
    offset = forms.IntegerField(min_value=0)
    comment = forms.CharField(required=False, max_length=5000)


@require_GET
@login_required
def next_records(request: HttpRequest, cluster_name: str, connector_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    snapshot = snapshots.connector_of(cluster, connector_name)
    if snapshot is None:
        raise Http404(gate.unknown_connector(cluster, connector_name))
    try:
        shown = records.next_records(user=request.user, cluster=cluster, snapshot=snapshot)
    except gate.Refused as exc:
        message, status = refusal(exc, kafka=READING_KAFKA)
        return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    context = {
        "cluster": cluster,
        "connector": snapshot,
        "next": shown,
        "can_stage": can_stage(request.user, cluster, connector_name),
    }
    return render(request, "dashboard/_next_records.html#records", context)


@require_POST
@login_required
def skip_record(request: HttpRequest, cluster_name: str, connector_name: str) -> HttpResponse:
    """Stage moving one partition past the record at `offset`; go to the edit's page."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    if not can_stage(request.user, cluster, connector_name):
        raise PermissionDenied(gate.ROLE_NEEDED[Action.STAGE])
    form = SkipForm(request.POST)
    if not form.is_valid():
        return _refused(request, "Skipping a record needs its topic, partition and offset.", 400)
    topic, partition = form.cleaned_data["topic"], form.cleaned_data["partition"]
    try:
        edit = stage_skip(
            cluster=cluster,
            connector=connector_name,
            user=request.user,
            topic=topic,
            partition=partition,
            offset=form.cleaned_data["offset"],
            absolute=request.build_absolute_uri,
            comment=form.cleaned_data["comment"],
        )
    except EditForbidden as exc:
        raise PermissionDenied(exc.message) from exc
    except SERVICE_ERRORS as exc:
        message, status = refusal(exc, kafka=READING_KAFKA)
        return _refused(request, message, status)
    return redirect("edit-detail", cluster_name=cluster.name, pk=edit.pk)


def _refused(request: HttpRequest, message: str, status: int) -> HttpResponse:
    context = {"error": message, **request.resolver_match.kwargs}
    return render(request, "dashboard/skip_refused.html", context, status=status)
