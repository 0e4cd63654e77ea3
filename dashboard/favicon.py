"""/favicon.ico for the pages that name no icon (the admin's, the browsable API's JSON, a
browser's own request): the project's icon, so that no page logs a 404 for it."""

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.templatetags.static import static
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    """Redirect to the icon every template links (static/img/favicon.svg)."""
    return HttpResponseRedirect(static("img/favicon.svg"))
