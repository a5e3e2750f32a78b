from django.core.management.base import BaseCommand, CommandError, CommandParser

from sources.models import Workspace
from sources.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a workspace and print it. The key is shown only this once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", required=True, help="The workspace's slug.")
        parser.add_argument("--name", default="cli", help="A label to tell keys apart.")

    def handle(self, *args: object, workspace: str, name: str, **options: object) -> None:
        target = Workspace.objects.filter(slug=workspace).first()
        if target is None:
            raise CommandError(f"No workspace with slug {workspace!r}.")
        _api_key, raw_key = api_key_create(workspace=target, name=name)
        self.stdout.write(raw_key)
