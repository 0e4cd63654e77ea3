"""Middleware of the pages."""

from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


def htmx_login_redirect(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable:
    """Send a whole-page redirect to the login page when an htmx request needs a login.

    htmx follows a plain 302 itself and would swap the login form into a table cell (a polled
    table does this as soon as the session expires); HX-Redirect reloads the page instead.
    """
    login_path = resolve_url(settings.LOGIN_URL)

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if (
            getattr(request, "htmx", False)
            and response.status_code == 302
            and response["Location"].split("?")[0] == login_path
        ):
            # Back to the page the user was on, not to the partial's URL.
            page = request.htmx.current_url_abs_path
            location = f"{login_path}?{urlencode({'next': page})}" if page else response["Location"]
            return HttpResponseClientRedirect(location)
        return response

    return middleware
