"""Production settings (DEBUG off) for the tests and benchmarks that run the app that way.

``production_settings_env`` is what every production deployment must set (DEBUG off, a
strong SECRET_KEY, explicit ALLOWED_HOSTS); tests/deploy/test_security_settings.py builds on it.

``loopback_production_env`` is for a server on 127.0.0.1. With DEBUG off the settings turn on
the HTTPS redirect, HSTS and Secure cookies, but a loopback server speaks plain HTTP, so those
three are switched off there (and only there): otherwise every request would be redirected
to https:// and the session cookie never sent back. Everything else (middleware, templates
without debug, no query log) is what production runs.
"""

import secrets


def production_settings_env(*, secret_key: str, allowed_hosts: str) -> dict[str, str]:
    return {"DEBUG": "false", "SECRET_KEY": secret_key, "ALLOWED_HOSTS": allowed_hosts}


def loopback_production_env() -> dict[str, str]:
    return {
        **production_settings_env(
            secret_key=secrets.token_urlsafe(50), allowed_hosts="127.0.0.1,localhost,testserver"
        ),
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_COOKIES": "false",
        "SECURE_HSTS_SECONDS": "0",
    }
