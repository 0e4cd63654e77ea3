"""Single sign-on through an OpenID Connect provider (SECURITY.md, "Single sign-on")."""
