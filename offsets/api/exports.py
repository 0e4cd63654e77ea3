"""Offsets exported over REST: KIP-875, KIP-199, or a Strimzi offsets ConfigMap."""

from django.utils import timezone
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from offsets.api.clusters import get_cluster, require_connector
from offsets.api.errors import errors, run_service
from offsets.domain.download_names import export_name
from offsets.formats import strimzi
from offsets.queries import offsets_export

# The shapes that hold exactly one connector.
ONE_CONNECTOR = ("kip875", "strimzi")


class ExportInput(serializers.Serializer):
    cluster = serializers.CharField()
    connectors = serializers.CharField(required=False, default="", help_text="a,b (default all)")
    connector = serializers.ListField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        default=list,
        help_text="one name per parameter, kept exactly (commas and spaces included)",
    )
    # Not "format": DRF reserves that query parameter for choosing a renderer.
    shape = serializers.ChoiceField(
        choices=["kip875", "kip199", "strimzi"],
        required=False,
        help_text="kip875 for one connector (default when one is named), else kip199; strimzi "
        "for one connector's offsets ConfigMap (Strimzi's KafkaConnector alterOffsets)",
    )
    from_beginning = serializers.BooleanField(required=False, default=False)
    configmap_name = serializers.CharField(
        required=False, default="", help_text="strimzi: the ConfigMap's name (<connector>-offsets)"
    )
    namespace = serializers.CharField(
        required=False, default="", help_text="strimzi: the ConfigMap's namespace (none)"
    )

    def validate_configmap_name(self, value: str) -> str:
        if value and (problem := strimzi.name_problem(value)):
            raise ValidationError(f"The ConfigMap name {problem}.")
        return value

    def validate_namespace(self, value: str) -> str:
        if value and (problem := strimzi.namespace_problem(value)):
            raise ValidationError(f"The namespace {problem}.")
        return value

    def validate(self, attrs):
        names = offsets_export.requested_names(attrs["connectors"], attrs["connector"])
        attrs["names"] = names
        attrs["shape"] = attrs.get("shape") or ("kip875" if len(names) == 1 else "kip199")
        if attrs["shape"] in ONE_CONNECTOR and len(names) != 1:
            raise ValidationError(
                {"connectors": [f"{attrs['shape']} exports exactly one connector."]}
            )
        if attrs["shape"] == "strimzi" and attrs["from_beginning"]:
            raise ValidationError(
                {"from_beginning": ["A Strimzi ConfigMap holds the latest offsets only."]}
            )
        return attrs


@extend_schema(
    parameters=[ExportInput],
    responses={
        200: OpenApiResponse(
            OpenApiTypes.OBJECT,
            description="KIP-875 {offsets: [...]}, KIP-199 {connector: [...], ...}, or a "
            'ConfigMap {apiVersion: "v1", kind: "ConfigMap", metadata, data: {"offsets.json"}} '
            "(JSON, which kubectl apply -f takes as it is)",
        ),
        **errors(400, 404, 503),
    },
    summary="Export offsets as KIP-875 (one connector), KIP-199 (several or all) or a "
    "Strimzi ConfigMap (one connector)",
)
@api_view(["GET"])
def export(request: Request) -> Response:
    query = ExportInput(data=request.query_params)
    query.is_valid(raise_exception=True)
    options = query.validated_data
    cluster = get_cluster(request, options["cluster"])
    for name in options["names"]:
        require_connector(request, cluster, name)
    # Saved under the name the pages give the same export (offsets.domain.download_names).
    name = export_name(
        cluster.name,
        options["names"],
        history=options["from_beginning"],
        configmap=options["shape"] == "strimzi",
        at=timezone.now(),
    )
    headers = {"Content-Disposition": content_disposition_header(False, name)}
    if options["shape"] == "strimzi":
        configmap = run_service(lambda: _configmap(request.user, cluster, options))
        return Response(configmap, headers=headers)
    if options["shape"] == "kip875":
        document = run_service(
            lambda: offsets_export.export_connector(
                user=request.user,
                cluster=cluster,
                connector=options["names"][0],
                from_beginning=options["from_beginning"],
            )
        )
    else:
        document = run_service(
            lambda: offsets_export.export_connectors(
                user=request.user,
                cluster=cluster,
                connectors=options["names"] or None,
                from_beginning=options["from_beginning"],
            )
        )
    return Response(document, headers=headers)


def _configmap(user, cluster, options: dict) -> dict:
    try:
        return offsets_export.export_configmap(
            user=user,
            cluster=cluster,
            connector=options["names"][0],
            name=options["configmap_name"],
            namespace=options["namespace"],
        )
    except ValueError as exc:
        # Past the checks above, only offsets too large for a ConfigMap get here.
        raise ValidationError({"connectors": [str(exc)]}) from exc
