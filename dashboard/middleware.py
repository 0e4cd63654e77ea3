"""Middleware of the pages."""

import logging
import sys
from collections.abc import Callable
from urllib.parse import urlencode

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render, resolve_url
from django.views import defaults
from django_htmx.http import HttpResponseClientRedirect

logger = logging.getLogger(__name__)


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


DATABASE_UNAVAILABLE = (
    "The dashboard's database is busy or unavailable ({error}), so this request was not "
    "completed. Nothing half-done was kept: try again in a moment. An offset edit that was "
    "being applied stays 'applying' until `manage.py reconcile_edits` settles it from Kafka."
)


def database_unavailable_response(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    """A 503 saying the database failed: JSON for the API, a short page otherwise."""
    message = DATABASE_UNAVAILABLE.format(error=_reason(exc))
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"detail": message, "code": "database_unavailable"}, status=503
        )
    else:
        response = render(request, "503.html", {"message": message}, status=503)
    # Proxies and browsers may retry; tell them when.
    response["Retry-After"] = "5"
    return response


def _reason(exc: DatabaseError) -> str:
    """A short cause for the page; the full error (hosts, ports) goes to the log only."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return "database is locked"
    return "the database server could not be reached"


class DatabaseUnavailableMiddleware:
    """Answer 503 with a clear message when the database is locked or unreachable.

    SQLite says "database is locked" when another connection holds the write lock longer
    than the busy timeout; PostgreSQL may be restarting or unreachable. Either is temporary
    and not a bug of this request, so it gets a 503 (retry later), not a 500 traceback. Every
    write that matters runs in a transaction, so the failed request left nothing half-written.
    Exceptions raised by other middleware (the session save) reach ``server_error`` instead.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, OperationalError | InterfaceError):
            logger.warning(
                "Database unavailable for %s %s: %s", request.method, request.path, exception
            )
            return database_unavailable_response(request, exception)
        return None


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a database outage met outside a view still answers 503, not 500."""
    exception = sys.exception()
    if isinstance(exception, OperationalError | InterfaceError):
        logger.warning(
            "Database unavailable for %s %s: %s", request.method, request.path, exception
        )
        return database_unavailable_response(request, exception)
    return defaults.server_error(request)
