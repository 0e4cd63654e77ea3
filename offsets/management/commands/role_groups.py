"""manage.py role_groups: create or refresh the role groups (the image's migrate step runs it)."""

from django.core.management.base import BaseCommand

from offsets.rights.roles import ensure_role_groups


class Command(BaseCommand):
    help = "Create (or refresh) the role groups: viewers, editors, approvers, refresh operators."

    def handle(self, *args: object, **options: object) -> None:
        for name, group in ensure_role_groups().items():
            grants = [str(grant).split(": ", 1)[1] for grant in group.grants.order_by("pk")]
            self.stdout.write(f"Group {name!r}: {'; '.join(grants)}")
