"""The API's errors: a service's error turned into its answer, and their bodies documented once.

DRF answers errors in two shapes: `{"detail": "..."}` (401, 403, 404, 409, 503, a body that is
not JSON) and, for input that fails validation, `{"<field>": ["message", ...], ...}` where a
nested field (a list of partitions) nests the same way. Views list the codes they can answer
with `errors(400, 404, ...)` next to their success responses.

A service's error says its own status (`http_status` on its class); `run_service` is where the
API answers with it.
"""

from collections.abc import Callable

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import APIException, ValidationError

from offsets.edits.errors import SERVICE_ERRORS, DocumentInputError, EditInputError
from offsets.kafka.connect_rest import ConnectRestError
from offsets.kafka.errors import KafkaError

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


class ServiceError(APIException):
    """A service's refusal or failure as `{"detail": ...}`, with the status its class carries."""

    def __init__(self, exc: EditInputError | KafkaError | ConnectRestError) -> None:
        super().__init__(str(exc))
        self.status_code = exc.http_status


def run_service[T](action: Callable[[], T]) -> T:
    """Call a service; answer its errors with their own status (bad input by its field)."""
    try:
        return action()
    except EditInputError as exc:
        raise _invalid(exc) from exc
    except SERVICE_ERRORS as exc:
        raise ServiceError(exc) from exc


def _invalid(exc: EditInputError) -> ValidationError:
    if isinstance(exc, DocumentInputError) and exc.field not in (None, "document"):
        # A place in an imported document (`orders-sink[0].partition`, a connector's name) is
        # not a request field: it nests under "document", as DRF nests a nested serializer's
        # errors. At the top level a connector called "cluster" or "0" would pose as a request
        # field or a list index.
        return ValidationError({"document": {exc.field: [exc.message]}})
    return ValidationError({exc.field or "non_field_errors": [exc.message]})
