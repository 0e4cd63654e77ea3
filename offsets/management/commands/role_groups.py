"""manage.py role_groups: create or refresh the role groups (the image's migrate step runs it)."""

from django.core.management.base import BaseCommand

from offsets.services.roles import ensure_role_groups


class Command(BaseCommand):
    help = "Create (or refresh) the offset editor and approver groups with their permissions."

    def handle(self, *args: object, **options: object) -> None:
        for name, group in ensure_role_groups().items():
            codenames = sorted(group.permissions.values_list("codename", flat=True))
            self.stdout.write(f"Group {name!r}: {', '.join(codenames)}")
