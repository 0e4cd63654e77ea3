"""The rule for every HTTP call the dashboard makes: a redirect is an answer, never followed.

urllib's default opener follows 301, 302, 303, 307 and 308 to any host and re-sends the
request's headers there, `Authorization` included. A Connect worker never redirects its REST
API and a webhook that redirects is misconfigured, so whoever answers with a redirect (a
proxy, an SSO gateway sending to its login page, an attacker's worker) would get the
credentials or the alert's body for nothing. The caller reports the 3xx with its Location.
"""

import urllib.request


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """Turn every redirect into the `HTTPError` it is, so the caller sees the 3xx."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def opener(*handlers: urllib.request.BaseHandler) -> urllib.request.OpenerDirector:
    """urllib's opener with `handlers`, refusing redirects."""
    return urllib.request.build_opener(*handlers, NoRedirects)
