"""Every URL pattern of the project, with its path parameters filled in, for the access tests.

The list comes from Django's URL resolver, not from a hand-kept list, so a URL added later is
checked by the access tests (login, CSRF, secrets) without anyone remembering to add it.
"""

import re
from dataclasses import dataclass
from urllib.parse import quote

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern


@dataclass(frozen=True)
class Endpoint:
    name: str  # "namespace:name", or the route text for an unnamed pattern
    url: str  # a concrete URL with every parameter filled in

    @property
    def is_api(self) -> bool:
        return self.url.startswith("/api/")

    @property
    def is_admin(self) -> bool:
        return self.url.startswith("/admin/")


# One sample value per path parameter name in the project's (and the admin's) URL patterns.
# A new parameter name makes `endpoints()` fail loudly until it gets a value here.
def sample_params(*, cluster: str, connector: str, edit_pk: int, admin_pk: int) -> dict:
    return {
        "cluster_name": cluster,
        "connector_name": connector,
        "connector": connector,
        "pk": edit_pk,
        "task": 0,
        "action": "approve",
        # The admin's own patterns.
        "object_id": str(admin_pk),
        "content_type_id": "1",
        "app_label": "offsets",
        "url": "no-such-admin-page/",
        "uidb64": "MQ",
        "token": "set-password",
        "id": str(admin_pk),
    }


def _walk(patterns, prefix: tuple, namespace: str):
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry.url_patterns, (*prefix, entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield (*prefix, entry.pattern), (f"{namespace}{entry.name}" if entry.name else None)


_CONVERTER = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")
_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")


def _segment(pattern, params: dict) -> str:
    if isinstance(pattern, RoutePattern):
        # Each value as `reverse` writes it: through its converter, then percent-encoded.
        def fill(match: re.Match[str]) -> str:
            value = params[match["name"]]
            converter = pattern.converters.get(match["name"])
            text = converter.to_url(value) if converter else str(value)
            return quote(text, safe="!$&'()*+,;=~:@")

        return _CONVERTER.sub(fill, str(pattern._route))
    if isinstance(pattern, RegexPattern):
        text = _GROUP.sub(lambda m: str(params[m["name"]]), pattern._regex)
        # The admin's app_list pattern is "^(?P<app_label>auth|offsets)/$": the group is filled
        # in above; drop the anchors and what remains of the regex syntax.
        return text.lstrip("^").rstrip("$").replace("\\", "")
    raise TypeError(f"Unknown URL pattern type {type(pattern)!r}")


def endpoints(params: dict) -> list[Endpoint]:
    """Every URL pattern of the project as a concrete URL (the admin's included)."""
    found = []
    for chain, name in _walk(get_resolver().url_patterns, (), ""):
        try:
            url = "/" + "".join(_segment(pattern, params) for pattern in chain)
        except KeyError as exc:
            raise AssertionError(
                f"No sample value for path parameter {exc} in {name or chain}: "
                "add one to tests/support/access.py sample_params()"
            ) from None
        found.append(Endpoint(name=name or url, url=url))
    return found
