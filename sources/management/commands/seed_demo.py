"""Create (or reuse) the demo workspace for `make run`: an owner, an API key, an agent, a text source.

The raw API key cannot be recovered from its hash, so the first run writes it to a file that only
root can read (--key-file); later runs read it back to print it again.
"""

import json
import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from agents.models import Agent
from ingestion.kinds.text import TextKind
from ingestion.lifecycle import source_create
from sources.models import ApiKey, Membership, Source, Workspace
from sources.services import api_key_create
from sources.tenancy import workspace_scope

DEMO_TEXT = """# Grounded

Grounded is an open knowledge backend for chat agents. A workspace admin adds sources - web pages,
sitemaps, feeds, pasted text and files - and Grounded crawls, parses, chunks and embeds them.

## Answers with citations

A website widget asks the agent questions. The agent answers only from the workspace's own passages,
cites them with numbers, and lists the sources it used. Questions outside the knowledge get a polite
off-topic reply instead of a guess.

## Privacy

Every workspace is isolated: no search, cache entry or task can read another workspace's knowledge.
"""


class Command(BaseCommand):
    help = "Create or reuse the demo workspace, owner, API key, agent and text source."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key-file", type=Path, required=True)
        parser.add_argument("--password", default="grounded-demo")

    def handle(self, *args: object, key_file: Path, password: str, **options: object) -> None:
        with transaction.atomic():
            workspace, _ = Workspace.objects.get_or_create(slug="demo", defaults={"name": "Demo workspace"})
            user_model = get_user_model()
            owner = user_model.objects.filter(username="owner").first()
            if owner is None:
                owner = user_model.objects.create_user("owner", "owner@example.com", password)
                owner.is_staff = owner.is_superuser = True  # the demo owner is also the operator
                owner.save()
            with workspace_scope(workspace.id):
                Membership.objects.get_or_create(user=owner, defaults={"role": Membership.Role.OWNER})
                agent = Agent.objects.order_by("id").first() or Agent.objects.create(
                    name="Demo agent", allowed_origins=["http://127.0.0.1:8000", "http://localhost:8000"]
                )
                saved = json.loads(key_file.read_text()) if key_file.exists() else {}
                if not ApiKey.objects.filter(prefix=saved.get("prefix", "-")).exists():
                    api_key, raw = api_key_create(workspace=workspace, name="demo")
                    saved = {"prefix": api_key.prefix, "key": raw}
                    key_file.parent.mkdir(parents=True, exist_ok=True)
                    key_file.write_text(json.dumps(saved))
                    os.chmod(key_file, 0o600)
                if not Source.objects.filter(agent=agent, title="About Grounded").exists():
                    source_create(
                        workspace=workspace,
                        agent_id=agent.id,
                        kind=TextKind.name,
                        title="About Grounded",
                        payload={"content": DEMO_TEXT},
                    )
        self.stdout.write(
            f"  login:      owner / {password}\n"
            f"  API key:    {saved['key']}\n"
            f"  agent:      {agent.name} (id {agent.id}), public key {agent.public_key}\n"
        )
