"""Delete a connector with its offsets, and clean up offsets that outlived their connector.

Thin views: look up (404), check the role (403), pass a form, call `offsets.edits.workflow`;
a staged edit's page is shown next (htmx: HX-Redirect), a refusal in place with its status.
The orphans page lists what the last refresh stored (`offsets.queries.orphans`): no Kafka read.
"""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.pages.edits.forms import CommentForm
from dashboard.pages.errors import refusal
from offsets.edits import workflow
from offsets.edits.roles import can_stage
from offsets.edits.workflow import Cleanup, Removal
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster
from offsets.queries.clusters import cluster_for_user
from offsets.queries.orphans import orphans
from offsets.rights.gate import Refused
from offsets.rights.grants import only_visible

# What each action stages.
CHANGES = {"delete": Removal, "cleanup": Cleanup}


@require_POST
@login_required
def stage(
    request: HttpRequest, cluster_name: str, connector_name: str, action: str
) -> HttpResponse:
    """Stage a removal ("delete") or a clean-up ("cleanup") and go to the new edit's page."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    change = CHANGES.get(action)
    if change is None:
        raise Http404(f"No action {action!r}.")
    if not can_stage(request.user, cluster, connector_name):
        raise PermissionDenied("Staging offset edits needs the editor role.")
    form = CommentForm(request.POST)
    if not form.is_valid():
        return _refused(request, cluster, "The comment is too long.", 400)
    try:
        edit = workflow.stage(
            cluster=cluster,
            connector=connector_name,
            user=request.user,
            change=change(),
            comment=form.cleaned_data["comment"],
        )
    except (Refused, KafkaError) as exc:
        return _refused(request, cluster, *refusal(exc))
    url = reverse("edit-detail", kwargs={"cluster_name": cluster.name, "pk": edit.pk})
    if request.htmx:
        return HttpResponse(status=204, headers={"HX-Redirect": url})
    return redirect(url)


def _refused(request: HttpRequest, cluster: Cluster, message: str, status: int) -> HttpResponse:
    if request.htmx:
        return render(
            request, "dashboard/orphans.html#outcome", {"message": message}, status=status
        )
    context = _orphans_context(request, cluster)
    return render(request, "dashboard/orphans.html", {**context, "message": message}, status=status)


@require_GET
@login_required
def orphans_page(request: HttpRequest, cluster_name: str) -> HttpResponse:
    """Offsets that outlived their connector, with a clean-up button each (editors)."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    return render(request, "dashboard/orphans.html", _orphans_context(request, cluster))


def _orphans_context(request: HttpRequest, cluster: Cluster) -> dict:
    return {
        "cluster": cluster,
        "orphans": only_visible(request.user, cluster, orphans(cluster), lambda o: o.connector),
        "can_stage": can_stage(request.user, cluster),
    }
