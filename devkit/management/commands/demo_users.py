from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from offsets.rights.roles import APPROVERS_GROUP, EDITORS_GROUP, ensure_role_groups

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "connect-demo"

# (role, username, password, group): an editor stages, an approver (another person) approves.
ROLE_USERS = [
    ("Editor", "editor", "connect-editor", EDITORS_GROUP),
    ("Approver", "approver", "connect-approver", APPROVERS_GROUP),
]


class Command(BaseCommand):
    help = "Create (or reset) the demo logins and print them. For the local demo only."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000/", help="Where the dashboard is served"
        )

    def handle(self, *args: object, url: str, **options: object) -> None:
        users = get_user_model().objects
        user, _ = users.get_or_create(username=DEMO_USERNAME)
        user.is_staff = True
        user.is_superuser = True
        user.set_password(DEMO_PASSWORD)
        user.save()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo login: username {DEMO_USERNAME!r}, password {DEMO_PASSWORD!r} at {url}"
            )
        )
        groups = ensure_role_groups()
        for role, username, password, group in ROLE_USERS:
            role_user, _ = users.get_or_create(username=username)
            role_user.set_password(password)
            role_user.save()
            role_user.groups.set([groups[group]])
            self.stdout.write(
                self.style.SUCCESS(
                    f"{role} login: username {username!r}, password {password!r} ({group})"
                )
            )
