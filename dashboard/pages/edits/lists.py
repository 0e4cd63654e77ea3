"""The list of a cluster's edits, and the header's counts: the edits awaiting the user's
approval, and the user's own edits that ended in a conflict (they need their author)."""

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.pages.edits.forms import EditFilterForm
from offsets.edits.audit import audit_log
from offsets.edits.roles import approves, can_approve, can_stage
from offsets.models import OffsetEdit
from offsets.queries.clusters import cluster_for_user
from offsets.rights import grants
from offsets.rights.grants import visible_clusters

# --- The list of a cluster's edits ------------------------------------------------------------


@require_GET
@login_required
def edit_list(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    may_approve = can_approve(request.user, cluster)
    waiting_here = OffsetEdit.objects.filter(cluster=cluster, state=OffsetEdit.State.SUBMITTED)
    form = EditFilterForm(request.GET)
    # Each row's count of changes comes with the rows: one query, however many edits.
    found = (
        OffsetEdit.objects.filter(cluster=cluster)
        .select_related("cluster", "target_cluster", "created_by")
        .annotate(
            change_count=Count("changes", distinct=True),
            restaged_count=Count("restaged_as", distinct=True),
        )
    )
    if form.is_valid():
        if form.cleaned_data["state"]:
            found = found.filter(state=form.cleaned_data["state"])
        if form.cleaned_data["connector"]:
            found = found.filter(connector=form.cleaned_data["connector"])
    return render(
        request,
        "edits/list.html",
        {
            "cluster": cluster,
            "form": form,
            "edits": grants.only_visible_edits(request.user, found[:200]),
            "audit_events": grants.only_visible_events(
                request.user, cluster, audit_log(cluster=cluster)
            ),
            "can_stage": can_stage(request.user, cluster),
            "may_approve": may_approve,
            "awaiting_here": len(_awaiting(request.user, waiting_here)) if may_approve else 0,
        },
    )


# --- The header's count of edits awaiting approval ---------------------------------------------


@require_GET
@login_required
def awaiting_approval(request: HttpRequest) -> HttpResponse:
    """How many submitted edits the user may approve (not their own, where their grants let
    them approve), linking to the oldest's cluster. The header asks for it after loading."""
    waiting = OffsetEdit.objects.filter(
        state=OffsetEdit.State.SUBMITTED, cluster__in=visible_clusters(request.user)
    ).order_by("submitted_at", "pk")
    mine = _awaiting(request.user, waiting)
    cluster = mine[0].cluster.name if mine else None
    conflicts = list(_own_conflicts(request.user))
    context = {
        "count": len(mine),
        "cluster_name": cluster,
        "conflicts": len(conflicts),
        "conflict_cluster": conflicts[0].cluster.name if conflicts else None,
    }
    return render(request, "edits/_awaiting.html", context)


# An editor's conflict stays in the header this long unless re-staged: then it is history.
CONFLICT_NOTICE_DAYS = 7


def _own_conflicts(user):
    """The user's own edits that ended in a conflict lately and were not re-staged (newest
    first): they need their author, who re-stages them, not an approver."""
    since = timezone.now() - timedelta(days=CONFLICT_NOTICE_DAYS)
    return (
        OffsetEdit.objects.filter(
            created_by=user,
            state=OffsetEdit.State.CONFLICT,
            finished_at__gte=since,
            cluster__in=visible_clusters(user),
            restaged_as__isnull=True,
        )
        .select_related("cluster")
        .order_by("-finished_at", "-pk")
    )


def _awaiting(user, submitted) -> list[OffsetEdit]:
    """The submitted edits `user` may approve: not their own, within their grants."""
    found = submitted.exclude(created_by=user).select_related("cluster", "target_cluster")
    return [edit for edit in found if approves(user, edit)]
