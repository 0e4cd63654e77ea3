"""The API's index at /api/v1/: its top collections, the shapes of the URLs below them and its
OpenAPI schema, so that a caller starting at the root finds the rest."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from offsets.api.errors import errors

# The URLs under a cluster and a connector, `{cluster}` and `{connector}` to fill in (a
# connector's name as a path segment: docs/pages-and-api.md, "Any connector name works").
_CLUSTER = "clusters/{cluster}/"
_CONNECTOR = _CLUSTER + "connectors/{connector}/"
TEMPLATES = {
    "connectors": _CLUSTER + "connectors/",
    "connector": _CONNECTOR,
    "partitions": _CONNECTOR + "partitions/",
    "offsets": _CONNECTOR + "offsets/",
    "lag": _CONNECTOR + "lag/",
    "history": _CONNECTOR + "history/",
    "live_state": _CLUSTER + "state/",
    "refreshes": _CLUSTER + "refreshes/",
    "orphans": _CLUSTER + "orphans/",
    "worker": _CLUSTER + "worker/",
}


class IndexOutput(serializers.Serializer):
    clusters = serializers.CharField(help_text="Every cluster the caller may see.")
    edits = serializers.CharField(help_text="Offset edits: list, stage, import, export.")
    schema = serializers.CharField(help_text="This API's OpenAPI 3 schema (YAML).")
    schema_json = serializers.CharField(help_text="The same schema as JSON.")
    templates = serializers.DictField(
        child=serializers.CharField(),
        help_text="The URLs under a cluster and a connector: fill in {cluster} and {connector}.",
    )


@extend_schema(responses={200: IndexOutput, **errors()})
@api_view(["GET"])
def index(request: Request) -> Response:
    """The API's top collections, its URL templates and its schema."""
    # Absolute, as DRF's own roots answer: the browsable API makes them links.
    root = reverse("api-index", request=request)
    schema = reverse("api-schema", request=request)
    return Response(
        {
            "clusters": reverse("api-clusters", request=request),
            "edits": reverse("api-edits", request=request),
            "schema": schema,
            "schema_json": f"{schema}?format=json",
            "templates": {name: root + template for name, template in TEMPLATES.items()},
        }
    )
