"""The API's JSON renderer: DRF's, but any string a Connect record holds can be sent."""

from rest_framework import renderers
from rest_framework.utils import encoders

from offsets.formats import jackson


class JSONEncoder(encoders.JSONEncoder):
    """DRF's encoder with lone surrogates escaped as `\\udxxx`, as Jackson writes them.

    DRF writes raw Unicode (UNICODE_JSON), and a str holding a lone surrogate has no UTF-8
    form: one such offset value would make the whole answer fail.
    """

    def encode(self, o: object) -> str:
        return jackson.escape_lone_surrogates(super().encode(o))


class JSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer with `JSONEncoder`."""

    encoder_class = JSONEncoder
