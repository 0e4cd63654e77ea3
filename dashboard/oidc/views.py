"""The login, the provider's callback and the logout, with a plain page when a login fails."""

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import auth
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.urls import reverse
from django.views.decorators.http import require_POST
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from dashboard.oidc import provider
from dashboard.oidc.backend import LoginRefused

logger = logging.getLogger(__name__)

STALE_STATE = (
    "This login link was already used, or was started in another browser session "
    "(its state does not match). Start again."
)
NO_LOGIN_STARTED = (
    "No login was started from this browser (or it has already ended): the identity "
    "provider's answer is ignored and nothing was changed."
)


def login(request: HttpRequest) -> HttpResponse:
    """The login page; with LOCAL_LOGIN off and the provider set up, the provider's."""
    if settings.OIDC_ENABLED and not settings.LOCAL_LOGIN:
        query = urlencode({"next": request.GET["next"]}) if request.GET.get("next") else ""
        return redirect(reverse("oidc_authentication_init") + (f"?{query}" if query else ""))
    context = {"oidc_enabled": settings.OIDC_ENABLED, "provider_name": settings.OIDC_PROVIDER_NAME}
    return auth_views.LoginView.as_view(extra_context=context)(request)


def login_failed(request: HttpRequest, reason: str, status: int = 400) -> HttpResponse:
    """A login through the provider failed: say so and why, and offer to start again."""
    logger.warning("Single sign-on login refused: %s", reason)
    return render(request, "registration/login_failed.html", {"reason": reason}, status=status)


class AuthenticateView(OIDCAuthenticationRequestView):
    """Send the browser to the provider, with state, nonce and a PKCE challenge."""

    def __init__(self, *args, **kwargs):
        # The endpoint is read per request (below), not from a setting at start-up.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request):
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not set up.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider.endpoints().authorization_endpoint
        except provider.ProviderUnavailable as exc:
            return login_failed(request, f"Login is not possible now: {exc}.", status=503)
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer: the user logged in, or a page saying why not."""

    def get(self, request):
        if not settings.OIDC_ENABLED:
            raise Http404("Single sign-on is not set up.")
        if request.GET.get("error"):
            # Any site can link here with an error: only a login this browser started may end.
            if not _take_state(request):
                return login_failed(request, NO_LOGIN_STARTED)
            if request.user.is_authenticated:
                auth.logout(request)  # a refused login leaves nobody logged in
            return login_failed(request, _provider_error(request), status=403)
        try:
            return super().get(request)
        except LoginRefused as exc:
            return login_failed(request, str(exc), status=403)
        except SuspiciousOperation:
            # The library's one SuspiciousOperation left here: a state not in the session.
            return login_failed(request, STALE_STATE)

    def login_failure(self):
        user = getattr(self, "user", None)
        if user is not None and not user.is_active:
            return login_failed(self.request, "This account is deactivated here.", status=403)
        return login_failed(self.request, STALE_STATE)


def _take_state(request: HttpRequest) -> bool:
    """Drop the callback's state from the logins this session started; whether it was one.

    mozilla-django-oidc keeps each started login's state in `oidc_states`; a state found
    there is used once, so a refused login's link cannot be replayed. A state not found
    leaves the session untouched.
    """
    states = request.session.get("oidc_states")
    state = request.GET.get("state", "")
    if not state or not isinstance(states, dict) or state not in states:
        return False
    del states[state]
    request.session.modified = True
    return True


def _provider_error(request: HttpRequest) -> str:
    # The provider's words are data: cut short, and escaped by the template.
    error = request.GET.get("error", "")[:100]
    description = request.GET.get("error_description", "")[:300]
    return f"The identity provider refused the login: {error}" + (
        f" ({description})" if description else ""
    )


@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    """Log out here, and at the provider too when it offers RP-initiated logout."""
    id_token = request.session.get("oidc_id_token")
    auth.logout(request)
    after = request.build_absolute_uri(resolve_url(settings.LOGOUT_REDIRECT_URL))
    if settings.OIDC_ENABLED and id_token:
        try:
            end_session = provider.endpoints().end_session_endpoint
        except provider.ProviderUnavailable:
            end_session = None
        if end_session:
            query = urlencode(
                {
                    "id_token_hint": id_token,
                    "post_logout_redirect_uri": after,
                    "client_id": settings.OIDC_RP_CLIENT_ID,
                }
            )
            return redirect(f"{end_session}?{query}")
    return redirect(after)
