"""The API's JSON parser: request bodies read by the same strict rules as uploaded files."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from offsets.formats import jackson


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser on `jackson.loads`: a body nested too deeply, not UTF-8, or holding a
    number beyond a double answers 400 with the reason, as a bad upload does."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return jackson.loads(stream.read())
        except jackson.JsonParseError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
