from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "connect-demo"


class Command(BaseCommand):
    help = "Create (or reset) the demo login and print it. For the local demo only."

    def handle(self, *args: object, **options: object) -> None:
        user, _ = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        user.is_staff = True
        user.is_superuser = True
        user.set_password(DEMO_PASSWORD)
        user.save()
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo login: username {DEMO_USERNAME!r}, password {DEMO_PASSWORD!r} "
                "at http://127.0.0.1:8000/"
            )
        )
