"""Users with the dashboard's permissions, for the role fixtures and the tests of roles."""


def user_with(django_user_model, username, *codenames):
    """Create `username` (password "<username>-password") with the offsets permissions given."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user(username, password=f"{username}-password")
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="offsets", codename__in=codenames)
    )
    return django_user_model.objects.get(pk=user.pk)  # a fresh object: no stale perm cache
