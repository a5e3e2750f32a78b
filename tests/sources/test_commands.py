import io
import json

import pytest
from django.core.management import CommandError, call_command

from sources.models import ApiKey, Source, Workspace
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def test_create_api_key_prints_a_working_key_once(workspace, client):
    out = io.StringIO()
    call_command("create_api_key", "--workspace", "acme", stdout=out)
    raw = out.getvalue().strip()
    assert raw.startswith("gk_")
    key = ApiKey.unscoped.get(workspace=workspace)
    assert key.key_hash != raw and raw not in key.key_hash  # only the hash is stored
    assert client.get("/api/v1/sources", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


def test_create_api_key_for_an_unknown_workspace_fails_clearly():
    with pytest.raises(CommandError, match="No workspace with slug 'nope'"):
        call_command("create_api_key", "--workspace", "nope")


def test_seed_demo_is_idempotent_and_reprints_the_same_key(tmp_path):
    key_file = tmp_path / "demo-key.json"
    first, second = io.StringIO(), io.StringIO()
    call_command("seed_demo", "--key-file", str(key_file), stdout=first)
    call_command("seed_demo", "--key-file", str(key_file), stdout=second)
    assert first.getvalue() == second.getvalue()
    assert json.loads(key_file.read_text())["key"] in first.getvalue()
    workspace = Workspace.objects.get(slug="demo")
    with workspace_scope(workspace.id):
        assert Source.objects.count() == 1 and ApiKey.objects.count() == 1
