"""Production settings (DEBUG off) for a server the tests or benchmarks run on loopback.

With DEBUG off the settings insist on a strong SECRET_KEY and explicit ALLOWED_HOSTS, and
turn on the HTTPS redirect, HSTS and Secure cookies. A server on 127.0.0.1 speaks plain
HTTP, so those three are switched off here (and only here): otherwise every request would be
redirected to https:// and the session cookie never sent back. Everything else (middleware,
templates without debug, no query log) is what production runs.
"""

import secrets


def loopback_production_env() -> dict[str, str]:
    return {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_COOKIES": "false",
        "SECURE_HSTS_SECONDS": "0",
    }
