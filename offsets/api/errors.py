"""The API's error bodies, documented once for the OpenAPI schema.

DRF answers errors in two shapes: `{"detail": "..."}` (401, 403, 404, 409, 503, a body that is
not JSON) and, for input that fails validation, `{"<field>": ["message", ...], ...}` where a
nested field (a list of partitions) nests the same way. Views list the codes they can answer
with `errors(400, 404, ...)` next to their success responses.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

DETAIL = inline_serializer("ErrorDetail", {"detail": serializers.CharField()})

_DESCRIPTIONS = {
    400: "Bad input: messages by field name (non_field_errors for the whole body; detail "
    "when the body is not JSON; an imported document's errors by their place in it, under "
    "document).",
    401: "Not logged in: no credentials, or a bad token (WWW-Authenticate: Token).",
    403: "Logged in, but the user lacks the role (or a session POST lacks its CSRF token).",
    404: "Unknown cluster, connector or edit.",
    409: "The edit's state does not allow this, the cluster has no Connect worker URL, or the "
    "workers are rebalancing (try again).",
    413: "The body is larger than the API reads (DATA_UPLOAD_MAX_MEMORY_SIZE).",
    415: "The body's content type is not JSON, a form or multipart.",
    500: "The refresh process could not be started (the body says why).",
    502: "The Connect worker refused or failed the request (the body quotes it, masked).",
    503: "The cluster's Kafka, or every one of its Connect workers, could not be reached.",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Documented error responses for `extend_schema(responses=...)`; 401 and 403 always are."""
    return {
        code: OpenApiResponse(
            OpenApiTypes.OBJECT if code == 400 else DETAIL, description=_DESCRIPTIONS[code]
        )
        for code in sorted({401, 403, *codes})
    }
