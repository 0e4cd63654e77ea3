"""Django settings, driven by environment variables with safe local defaults.

Every variable is read through a small typed helper that fails loudly on a bad value,
and secrets can come from a file (``<NAME>_FILE``) instead of the environment.
"""

import importlib.util
import ipaddress
import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from dashboard.logs import log_format, logging_config
from dashboard.oidc import config as oidc_config

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    value = os.getenv(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")


def envint(name: str, default: str) -> int:
    value = os.getenv(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


def envsecret(name: str, default: str) -> str:
    """Read a secret from NAME, or from the file named by NAME_FILE (Docker/K8s secrets)."""
    path = os.getenv(f"{name}_FILE")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path!r} cannot be read: {exc}") from None
    return os.getenv(name, default)


def envnetworks(name: str, default: str) -> list[str]:
    """Read comma-separated IP addresses or CIDR networks, e.g. 10.0.0.0/8,2001:db8::/32."""
    networks = envlist(name, default)
    for item in networks:
        try:
            ipaddress.ip_network(item)
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"{name} must list IP addresses or networks such as 10.0.0.0/8 or 192.0.2.7, "
                f"not {item!r} ({exc})"
            ) from None
    return networks


# Local runs (make demo, the tests) default to DEBUG on; a deployment sets DEBUG=false, and
# then every security default below turns strict (see SECURITY.md, "Production settings").
DEBUG = envbool("DEBUG", "true")
# The "django-insecure-" prefix makes `check --deploy` flag this key if it ever reaches
# production; with DEBUG off it is refused outright (below).
DEVELOPMENT_SECRET_KEY = "django-insecure-local-development-only-" + "x" * 32
SECRET_KEY = envsecret("SECRET_KEY", DEVELOPMENT_SECRET_KEY if DEBUG else "")
if not DEBUG:
    # A guessable key lets anyone forge sessions (log in as an approver) and CSRF tokens.
    if not SECRET_KEY or SECRET_KEY.startswith("django-insecure"):
        raise ImproperlyConfigured(
            "SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off, e.g. to the output "
            "of: python -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured(
            "SECRET_KEY is too weak: use at least 50 random characters (5 or more different)."
        )
# With DEBUG off there is no default host: the deployment names the host(s) it answers for.
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver" if DEBUG else "")
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must be set when DEBUG is off, e.g. offsets.example.com"
    )
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")

# The development kit (devkit/: the embedded broker and worker, the demos) is in a checkout and
# not in the image. It comes before `offsets` so that its `add_cluster`, which adds --embedded,
# is the one manage.py runs (Django takes a command from the first app that has it).
DEVKIT_APPS = ["devkit"] if importlib.util.find_spec("devkit") else []

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    *DEVKIT_APPS,
    "offsets",
    "dashboard",
]

MIDDLEWARE = [
    # The probes, before the HTTPS redirect and the Host check (dashboard/health.py).
    "dashboard.health.probes",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "dashboard.middleware.htmx_login_redirect",
    "dashboard.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# sqlite:///path/to/db.sqlite3 (the default, a file beside manage.py) or postgres://user@host/db
DATABASES = {
    "default": dj_database_url.parse(
        os.getenv("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", "0"),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The pages cache what they compute from refresh results, keyed by the latest finished run
# (dashboard/pages/cache.py). Per-process memory is enough: the key is checked against the
# database on every request, so processes never serve each other's stale entries; each
# process computes a page once per refresh run. An entry is a page of rows or a chart:
# measured 0.2-16 KiB, so 1,000 entries hold at most ~16 MiB per process.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "pages",
        "OPTIONS": {"MAX_ENTRIES": 1000},
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# --- Single sign-on through an OpenID Connect provider (SECURITY.md, "Single sign-on"): off
# until an issuer or a discovery URL is set. mozilla-django-oidc reads the OIDC_RP_* names. ---
OIDC_ISSUER = os.getenv("OIDC_ISSUER", "").strip()
OIDC_DISCOVERY_URL = oidc_config.discovery_url(OIDC_ISSUER, os.getenv("OIDC_DISCOVERY_URL", ""))
OIDC_ENABLED = bool(OIDC_DISCOVERY_URL)
OIDC_PROVIDER_NAME = os.getenv("OIDC_PROVIDER_NAME", "single sign-on")
OIDC_RP_CLIENT_ID = os.getenv("OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = envsecret("OIDC_CLIENT_SECRET", "")
if OIDC_ENABLED and not OIDC_RP_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_CLIENT_ID must be set with OIDC_ISSUER or OIDC_DISCOVERY_URL")
OIDC_RP_SCOPES = oidc_config.scopes(os.getenv("OIDC_SCOPES", "openid profile email"))
OIDC_GROUPS_CLAIM = os.getenv("OIDC_GROUPS_CLAIM", "groups")
OIDC_RP_SIGN_ALGO = os.getenv("OIDC_SIGN_ALGO", "RS256")
# The authorization code flow with PKCE (S256), a nonce and a state per login.
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
# The ID token is kept in the session for the provider's logout (its id_token_hint).
OIDC_STORE_ID_TOKEN = True
# The client secret goes in the Authorization header (client_secret_basic, OpenID Connect's
# default), not the form body: a token endpoint that redirects elsewhere does not get it
# resent (requests drops the header on a redirect to another host, not a body).
OIDC_TOKEN_USE_BASIC_AUTH = envbool("OIDC_TOKEN_USE_BASIC_AUTH", "true")
# Seconds a request to the provider may take; seconds of clock skew an ID token may have.
OIDC_TIMEOUT = envint("OIDC_TIMEOUT", "10")
OIDC_CLOCK_LEEWAY_SECONDS = envint("OIDC_CLOCK_LEEWAY_SECONDS", "60")
# LOCAL_LOGIN=false: /login/ goes to the provider and local passwords are refused, but for a
# superuser at /admin/login/ when BREAK_GLASS_LOGIN=true (the way in when the provider is down).
LOCAL_LOGIN = envbool("LOCAL_LOGIN", "true")
BREAK_GLASS_LOGIN = envbool("BREAK_GLASS_LOGIN", "false")
AUTHENTICATION_BACKENDS = [
    "dashboard.oidc.backend.LocalPasswordBackend",
    "dashboard.oidc.backend.ProviderBackend",
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.getenv("STATIC_ROOT", BASE_DIR / "var" / "static"))
# STATIC_COLLECTED: `collectstatic` has run into STATIC_ROOT (the image). The web process then
# serves those files itself (whitenoise, no separate web server), each under a name with its
# content's hash, gzip and brotli beside it, cached for a year. Without it (development)
# files keep their names and runserver serves them.
STATIC_COLLECTED = envbool("STATIC_COLLECTED", "false")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_COLLECTED
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
if STATIC_COLLECTED:
    MIDDLEWARE.insert(
        MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
        "whitenoise.middleware.WhiteNoiseMiddleware",
    )

# --- Transport and browser security. Every default follows DEBUG: strict when it is off. ---
PRODUCTION_DEFAULT = "false" if DEBUG else "true"
# Cookies only over HTTPS (the session cookie is an approver's power to write offsets).
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", PRODUCTION_DEFAULT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The pages send the CSRF token from the template (<body hx-headers>), never from the cookie,
# so scripts need not read the cookie at all.
CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", str(12 * 3600))
# Whom a user without any grant is told to ask for one (a team, a channel, an address).
ACCESS_CONTACT = os.environ.get("ACCESS_CONTACT", "the dashboard's administrators")
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", PRODUCTION_DEFAULT)
# Behind a proxy that terminates TLS, Django sees plain HTTP; trust its X-Forwarded-Proto
# only when told to (a client could otherwise claim HTTPS itself).
if envbool("SECURE_PROXY_SSL_HEADER", "false"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "0" if DEBUG else str(365 * 24 * 3600))
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", "false")
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "false")
SILENCED_SYSTEM_CHECKS = []
# HSTS on every subdomain, and the browsers' preload list, reach beyond this one app (the
# dashboard usually lives on a subdomain of a company domain): the operator opts in through
# the variables above; until then `check --deploy` is told that the choice is deliberate.
if not SECURE_HSTS_INCLUDE_SUBDOMAINS:
    SILENCED_SYSTEM_CHECKS.append("security.W005")
if not SECURE_HSTS_PRELOAD:
    SILENCED_SYSTEM_CHECKS.append("security.W021")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (Django's ContentSecurityPolicyMiddleware): scripts, styles and
# everything else only from this site -- no inline script or style, no eval. htmx is served
# from static/ and runs without eval as long as no hx-on/js: attributes are used; its
# indicator <style> is switched off in base.html (htmx-config) for the same reason.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF],
    "connect-src": [CSP.SELF],
    # The provider too: the login and logout forms' redirects lead there.
    "form-action": [CSP.SELF]
    + ([oidc_config.provider_origin(OIDC_DISCOVERY_URL)] if OIDC_ENABLED else []),
    "frame-ancestors": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "object-src": [CSP.NONE],
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Scripts: `Authorization: Token <key>` (manage.py drf_create_token USERNAME). First,
        # because DRF takes the first class's WWW-Authenticate header: a caller without valid
        # credentials gets 401 (log in), kept apart from 403 (logged in, wrong role).
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's two defaults, the JSON one able to write any string a Connect record holds.
    "DEFAULT_RENDERER_CLASSES": [
        "offsets.api.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    # Bodies parsed by the rules uploads follow: nesting, encoding and numbers answer 400.
    "DEFAULT_PARSER_CLASSES": [
        "offsets.api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Kafka Connect offsets dashboard API",
    "VERSION": "1",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",  # the default
        "offsets.api.schema_hooks.empty_query_values_mean_absent",
        "offsets.api.schema_hooks.describe_connector_names",
    ],
}

# Where the refreshes started from a page, the embedded broker and the demo keep their pids and
# logs.
RUN_DIR = Path(os.getenv("RUN_DIR", BASE_DIR / ".run"))
# The broker's and the Connect worker's jars (`make kafka-runtime` puts them there).
KAFKA_RUNTIME_LIBS = Path(
    os.getenv("KAFKA_RUNTIME_LIBS", BASE_DIR / "var" / "kafka-runtime" / "libs")
)
# Connect plugins only some workers load, one folder each (`make kafka-plugins`): plugin.path.
KAFKA_RUNTIME_PLUGINS = Path(
    os.getenv("KAFKA_RUNTIME_PLUGINS", BASE_DIR / "var" / "kafka-runtime" / "plugins")
)

# Spark: local mode by default; SPARK_MASTER=spark://host:7077 (or yarn, k8s://...) for a cluster.
SPARK_MASTER = os.getenv("SPARK_MASTER", "local[*]")
# Extra Spark settings as "key=value,key=value", e.g. "spark.executor.memory=2g".
SPARK_CONF = dict(item.split("=", 1) for item in envlist("SPARK_CONF", "") if "=" in item)
# Spark Connect (docs/refresh.md): SPARK_REMOTE=sc://host:15002 runs every refresh on that
# server, with no Spark JVM in this process. SPARK_REMOTE_FILE names a file holding the URL
# instead, for one with ";token=..." that stays out of the environment and the process list.
SPARK_REMOTE = envsecret("SPARK_REMOTE", "")
if SPARK_REMOTE and not SPARK_REMOTE.startswith("sc://"):
    raise ImproperlyConfigured("SPARK_REMOTE must be a Spark Connect URL: sc://host:port")
if SPARK_REMOTE and os.getenv("SPARK_MASTER"):
    raise ImproperlyConfigured(
        "SPARK_MASTER and SPARK_REMOTE both set: a refresh runs on one Spark, set only one"
    )

# Where the refresh keeps the full per-commit history (Parquet): a local directory. On a Spark
# cluster, one mounted at the same path on every executor, the refresh's driver and the web
# server (NFS or another shared file system): the read tasks write it with plain file I/O.
OFFSETS_HISTORY_PATH = os.getenv("OFFSETS_HISTORY_PATH", str(BASE_DIR / "var" / "history"))
# Width of the commit-rate buckets, and the rules' thresholds.
COMMIT_BUCKET_SECONDS = envint("COMMIT_BUCKET_SECONDS", "300")
STALL_AFTER_FLUSH_INTERVALS = envint("STALL_AFTER_FLUSH_INTERVALS", "5")
# Burrow evaluates a sink partition over its last N lag samples (one per refresh).
LAG_WINDOW_SAMPLES = envint("LAG_WINDOW_SAMPLES", "10")
# Lag samples older than this many days are dropped by the refresh (0: keep them all); the
# samples Burrow's window needs stay whatever their age.
LAG_SAMPLE_RETENTION_DAYS = envint("LAG_SAMPLE_RETENTION_DAYS", "7")
# A refresh keeps its lag samples only when the cluster's last ones are at least this many
# seconds old (0: every refresh keeps its samples), so a loop of one round a second stores a
# sampling a minute, not 86,400 a day; the current lag is still updated every round.
LAG_SAMPLE_SECONDS = envint("LAG_SAMPLE_SECONDS", "60")
# Sink connector classes that keep their offsets outside Connect (their preCommit returns {}),
# beside the ones the dashboard knows: shown as such rather than as lagging (docs/refresh.md).
EXTERNAL_OFFSETS_SINK_CLASSES = envlist("EXTERNAL_OFFSETS_SINK_CLASSES", "")
# Spark tasks per Kafka read: several Kafka partitions share a task when there are more
# partitions than this (each Python task costs ~85 ms of fixed overhead).
SPARK_MAX_READ_TASKS = envint("SPARK_MAX_READ_TASKS", "8")

# The pages call results older than this stale (a refresh is overdue).
SNAPSHOT_STALE_SECONDS = envint("SNAPSHOT_STALE_SECONDS", "1800")
# Seconds between the pages' htmx polls of their tables; faster while a refresh runs.
PAGE_POLL_SECONDS = envint("PAGE_POLL_SECONDS", "15")
PAGE_POLL_SECONDS_WHILE_REFRESHING = envint("PAGE_POLL_SECONDS_WHILE_REFRESHING", "2")
# Refresh runs that ended more than this many days ago are deleted by the next refresh of their
# cluster (0: keep them all); the cluster's last successful run stays whatever its age.
REFRESH_RUN_RETENTION_DAYS = envint("REFRESH_RUN_RETENTION_DAYS", "30")
# At most this many finished runs of a cluster are kept, the newest (0: no limit): a loop of
# one round a second records 86,400 runs a day.
REFRESH_RUNS_KEPT = envint("REFRESH_RUNS_KEPT", "10000")
# manage.py scheduler: refreshes of different clusters run side by side up to this many; it
# looks for due clusters this often; on SIGTERM it waits this long for running refreshes
# (a container runtime kills it after 10 s by default).
SCHEDULER_REFRESHES_AT_ONCE = envint("SCHEDULER_REFRESHES_AT_ONCE", "2")
SCHEDULER_ROUND_SECONDS = envint("SCHEDULER_ROUND_SECONDS", "1")
SCHEDULER_STOP_SECONDS = envint("SCHEDULER_STOP_SECONDS", "7")
# /readyz: the scheduler counts as running if its last round is this recent, and a cluster as
# refreshed if its last success is within this many of its periods.
READY_SCHEDULER_SECONDS = envint("READY_SCHEDULER_SECONDS", "60")
READY_REFRESH_PERIODS = envint("READY_REFRESH_PERIODS", "3")

# Seconds a live read of a Connect topic (config, status) may take before it is reported as
# "broker unreachable" instead of hanging a page.
KAFKA_READ_TIMEOUT = envint("KAFKA_READ_TIMEOUT", "10")
# Seconds an offset edit's write (transaction commit, group offsets change) may take.
KAFKA_WRITE_TIMEOUT = envint("KAFKA_WRITE_TIMEOUT", "30")

# /metrics (docs/metrics.md) is never open by default: a scraper sends METRICS_TOKEN as
# "Authorization: Bearer <token>", or calls from an address in METRICS_ALLOWED_ADDRESSES.
METRICS_TOKEN = envsecret("METRICS_TOKEN", "")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    # A short token can be guessed by a scraper-shaped brute force over the network.
    raise ImproperlyConfigured(
        "METRICS_TOKEN must be at least 16 characters, e.g. the output of: "
        "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
    )
METRICS_ALLOWED_ADDRESSES = envnetworks("METRICS_ALLOWED_ADDRESSES", "")
# Sink topic-partitions given series of their own; past it only per-connector series remain,
# so one huge sink cannot swamp Prometheus (0: never any per-partition series).
METRICS_MAX_SINK_PARTITIONS = envint("METRICS_MAX_SINK_PARTITIONS", "10000")

# Alerts (offsets/alerts/) send e-mail through Django's default mailer (MAILERS,
# Django 6.1's successor of the EMAIL_* settings), configured from the usual EMAIL_* variables.
MAILERS = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": os.getenv("EMAIL_HOST", "localhost"),
            "port": envint("EMAIL_PORT", "25"),
            "username": os.getenv("EMAIL_HOST_USER", ""),
            "password": envsecret("EMAIL_HOST_PASSWORD", ""),
            "use_tls": envbool("EMAIL_USE_TLS", "false"),
            "use_ssl": envbool("EMAIL_USE_SSL", "false"),
            # Seconds an SMTP connection may wait: a mail server that hangs must not hold the
            # sender.
            "timeout": envint("EMAIL_TIMEOUT", "10"),
        },
    }
}
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "connect-offsets@localhost")
# Seconds one webhook request may take before the delivery counts as failed.
ALERT_WEBHOOK_TIMEOUT = envint("ALERT_WEBHOOK_TIMEOUT", "5")
# A failed delivery is tried again after ALERT_RETRY_SECONDS, then twice as long each time,
# ALERT_MAX_ATTEMPTS times in all (30 s, 1 m, 2 m, 4 m, 8 m, then it stays failed).
ALERT_RETRY_SECONDS = envint("ALERT_RETRY_SECONDS", "30")
ALERT_MAX_ATTEMPTS = envint("ALERT_MAX_ATTEMPTS", "6")
# The dashboard's public address, for the links in alerts (e.g. https://connect-dash.example.com).
ALERT_DASHBOARD_URL = os.getenv("ALERT_DASHBOARD_URL", "").rstrip("/")

LOG_LEVEL = os.getenv("LOG_LEVEL", "INFO").upper()
# LOG_FORMAT=json (the image's default) writes one JSON object a line; messages are masked.
LOG_FORMAT = log_format()
LOGGING = logging_config(LOG_LEVEL)
