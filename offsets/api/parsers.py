"""The API's JSON parser: request bodies read by the same strict rules as uploaded files, and
one larger than the API reads answered 413; integer query parameters read as strictly."""

import re

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import parsers, serializers, status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.request import Request

from offsets.formats import jackson


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser on `jackson.loads`: a body nested too deeply, not UTF-8, or holding a
    number beyond a double answers 400 with the reason, as a bad upload does."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return jackson.loads(stream.read())
        except jackson.JsonParseError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def request_data(request: Request):
    """The request's JSON body; one larger than the API reads answers 413 saying so."""
    try:
        return request.data
    except RequestDataTooBig:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raise PayloadTooLarge(
            f"The request body is larger than {limit:,} bytes, the most the API reads "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE). Split the document, or upload it on the import page."
        ) from None


_INTEGER_TEXT = re.compile(r"-?[0-9]+")


class QueryIntegerField(serializers.IntegerField):
    """An integer query parameter written as one: DRF's IntegerField also takes "4.0" (it
    drops a trailing ".0"), which the schema's `type: integer` does not allow; schemathesis
    sent ?page=4.0 and got page 1 with a 200 instead of a 400."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not _INTEGER_TEXT.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)
