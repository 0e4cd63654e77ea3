"""Settings of the app server the load test starts: production settings, one change.

The test users' passwords are stored with the MD5 hasher (test-only, as in every other test)
so that logging in 50 users costs milliseconds, not 50 PBKDF2 rounds of a second each on a
two-core machine; the login itself still goes through the real form, CSRF and session.
"""

from dashboard.settings import *  # noqa: F403

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.MD5PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
