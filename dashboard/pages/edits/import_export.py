"""Offsets in and out of a cluster's pages: import a KIP-875/KIP-199 document or a Strimzi
ConfigMap as draft edits (a dry run shows the diffs), export offsets as a download. Views stay
thin: look up (404), check the role (403), pass a form, call a service."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.pages.edits.diffs import preview_context
from dashboard.pages.edits.forms import ExportForm, ImportForm
from dashboard.pages.errors import READING_KAFKA
from dashboard.pages.formatting import attachment
from offsets.domain.download_names import export_name
from offsets.edits.roles import can_stage
from offsets.edits.workflow import ConnectorNotFound, EditInputError, import_document
from offsets.formats import jackson, strimzi
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster
from offsets.queries import offsets_export
from offsets.queries.clusters import cluster_for_user, require_connector
from offsets.rights import gate


@require_http_methods(["GET", "POST"])
@login_required
def import_offsets(request: HttpRequest, cluster_name: str) -> HttpResponse:
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    if not can_stage(request.user, cluster):
        raise PermissionDenied("Staging offset edits needs the editor role.")
    result, status = None, 200
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                result = import_document(
                    cluster=cluster,
                    user=request.user,
                    data=data["file"],
                    connector=data["connector"],
                    dry_run=data["dry_run"],
                    comment=data["comment"],
                )
            except EditInputError as exc:
                where = f"{exc.field}: " if exc.field else ""
                form.add_error(None, f"Nothing was staged. {where}{exc.message}")
            except (ConnectorNotFound, gate.NotFound) as exc:
                # A name outside the user's grants reads as one that does not exist.
                form.add_error("connector" if exc.field == "connector" else None, exc.message)
            except KafkaError as exc:
                form.add_error(None, f"{READING_KAFKA}: {exc}")
            else:
                status = 200
                if not data["dry_run"]:
                    return redirect(reverse("edit-list", args=[cluster.name]) + "?state=draft")
    else:
        form = ImportForm()
    return render(
        request,
        "edits/import.html",
        {
            "cluster": cluster,
            "form": form,
            "result": result,
            "previews": [
                preview_context(preview) for preview in (result.previews if result else [])
            ],
        },
        status=status,
    )


@require_GET
@login_required
def export_offsets(request: HttpRequest, cluster_name: str) -> HttpResponse:
    """Download offsets: one connector as KIP-875 or a Strimzi ConfigMap, several as KIP-199."""
    cluster = cluster_for_user(user=request.user, name=cluster_name)
    form = ExportForm(request.GET)
    if not form.is_valid():
        return JsonResponse({"errors": form.errors.get_json_data()}, status=400)
    options = form.cleaned_data
    for name in options["names"]:
        require_connector(request.user, cluster, name)
    if options["format"] == "strimzi":
        return _export_configmap(request.user, cluster, options)
    try:
        if options["format"] == "kip875":
            document = offsets_export.export_connector(
                user=request.user,
                cluster=cluster,
                connector=options["names"][0],
                from_beginning=options["from_beginning"],
            )
        else:
            document = offsets_export.export_connectors(
                user=request.user,
                cluster=cluster,
                connectors=options["names"] or None,
                from_beginning=options["from_beginning"],
            )
    except (ConnectorNotFound, gate.NotFound) as exc:
        raise Http404(exc.message) from exc
    except KafkaError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.http_status)
    response = HttpResponse(jackson.dumps_text(document, indent=2), content_type="application/json")
    name = export_name(
        cluster.name,
        options["names"],
        history=options["from_beginning"],
        configmap=False,
        at=timezone.now(),
    )
    response["Content-Disposition"] = attachment(name)
    return response


def _export_configmap(user, cluster: Cluster, options: dict) -> HttpResponse:
    """Download one connector's offsets as the ConfigMap Strimzi's alterOffsets reads."""
    connector = options["names"][0]
    try:
        configmap = offsets_export.export_configmap(
            user=user,
            cluster=cluster,
            connector=connector,
            name=options["configmap_name"],
            namespace=options["namespace"],
        )
    except (ConnectorNotFound, gate.NotFound) as exc:
        raise Http404(exc.message) from exc
    except KafkaError as exc:
        return JsonResponse({"error": str(exc)}, status=exc.http_status)
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    response = HttpResponse(strimzi.dump_yaml(configmap), content_type="application/yaml")
    response["Content-Disposition"] = attachment(
        export_name(
            cluster.name,
            [connector],
            history=False,
            configmap=True,
            at=timezone.now(),
            extension="yaml",
        )
    )
    return response
