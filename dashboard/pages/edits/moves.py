"""The "Move to another cluster" page of a connector (KIP-980): choose the target, supply the
masked secrets again, stage the move as a draft edit (whose page shows the diff against the
target). Thin: look up (404), check the role (403), pass a form, call `offsets.edits.workflow`.
"""

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from dashboard.pages.errors import READING_KAFKA, WORKER, refusal
from offsets.domain.masking import mask_secrets
from offsets.edits.kinds.move.reads import source_config
from offsets.edits.kinds.move.rules import kept_references, secret_keys
from offsets.edits.roles import can_stage
from offsets.edits.workflow import (
    SERVICE_ERRORS,
    ConnectorNotFound,
    EditForbidden,
    EditStateConflict,
    Move,
    stage,
)
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster
from offsets.queries.clusters import cluster_for_user
from offsets.rights.grants import visible_clusters


class MoveForm(forms.Form):
    target = forms.ChoiceField(label="Target cluster")
    comment = forms.CharField(required=False, max_length=5000, widget=forms.Textarea)

    def __init__(self, *args, targets: list[str], secrets: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [(name, name) for name in targets]
        self.secret_names = secrets
        # Fields by position: a config key may hold characters a form field name should not.
        for index, key in enumerate(secrets):
            self.fields[f"secret_{index}"] = forms.CharField(
                label=key, required=False, strip=False, widget=forms.PasswordInput
            )

    def secrets(self) -> dict[str, str]:
        values = (
            (key, self.cleaned_data[f"secret_{i}"]) for i, key in enumerate(self.secret_names)
        )
        return {key: value for key, value in values if value}


@require_http_methods(["GET", "POST"])
@login_required
def connector_move(request: HttpRequest, cluster_name: str, connector_name: str) -> HttpResponse:
    """GET: the move form; POST: stage the move and go to its edit page."""
    cluster = cluster_for_user(user=request.user, name=cluster_name, connector=connector_name)
    if not can_stage(request.user, cluster, connector_name):
        raise PermissionDenied("Staging a move needs the editor role.")
    context = {"cluster": cluster, "connector_name": connector_name, "error": ""}
    try:
        config = source_config(cluster=cluster, connector=connector_name)
    except (ConnectorNotFound, EditStateConflict, KafkaError) as exc:
        message, status = refusal(exc, kafka=READING_KAFKA)
        if isinstance(exc, EditStateConflict) and request.method == "GET":
            # The connector exists but cannot move (deleted, offsets only): the page says why;
            # only staging it is a conflict.
            status = 200
        return _page(request, {**context, "error": message}, status)
    targets = move_targets(request.user, cluster, connector_name)
    form = MoveForm(request.POST or None, targets=targets, secrets=secret_keys(config))
    context.update(
        form=form,
        targets=targets,
        config=sorted(mask_secrets(config).items()),
        references=kept_references(config),
    )
    if request.method == "GET":
        return _page(request, context)
    if not form.is_valid():
        return _page(request, context, 400)
    message, status = _stage(request, cluster, connector_name, form)
    if status is None:
        return redirect("edit-detail", cluster_name=cluster.name, pk=message)
    return _page(request, {**context, "error": message}, status)


def move_targets(user, cluster: Cluster, connector: str) -> list[str]:
    """The names of the clusters `connector` of `cluster` can move to: the others with a
    worker URL. A move needs rights on both clusters: those the user may stage on."""
    return [
        target.name
        for target in visible_clusters(user)
        .exclude(pk=cluster.pk)
        .exclude(connect_url="")
        .order_by("name")
        if can_stage(user, target, connector)
    ]


def _stage(request, cluster: Cluster, connector: str, form: MoveForm):
    """Stage the move: (edit pk, None), or (the message, the status to answer with)."""
    target = Cluster.objects.get(name=form.cleaned_data["target"])
    try:
        edit = stage(
            cluster=cluster,
            connector=connector,
            user=request.user,
            change=Move(target, form.secrets()),
            comment=form.cleaned_data["comment"],
        )
    except EditForbidden as exc:
        raise PermissionDenied(exc.message) from exc
    except SERVICE_ERRORS as exc:
        # Two clusters are read: the words cannot say which one failed.
        return refusal(
            exc, kafka="A cluster could not be read", worker=f"{WORKER} of {target.name}"
        )
    return edit.pk, None


def _page(request: HttpRequest, context: dict, status: int = 200) -> HttpResponse:
    return render(request, "edits/move.html", context, status=status)
