"""Secrets sealed at rest: the raw column holds no secret, keys rotate, production needs its own key."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from agents.models import Agent
from config.secrets import SecretUnreadable, sealing
from sources.tenancy import workspace_scope
from tests.factories import ROOT

pytestmark = pytest.mark.django_db

SECRET = "sk-live-4f9c2e7d1a8b3c6e"
KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()


def _raw_value(agent: Agent) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT llm_api_key FROM agents_agent WHERE id = %s", [agent.id])
        return cursor.fetchone()[0]


def _raw_row(agent: Agent) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT agents_agent::text FROM agents_agent WHERE id = %s", [agent.id])
        return cursor.fetchone()[0]


def _reloaded(agent: Agent) -> str:
    return Agent.unscoped.get(id=agent.id).llm_api_key


def _agent_with_key(workspace, key: str = SECRET) -> Agent:
    with workspace_scope(workspace.id):
        return Agent.objects.create(name="Sealed", llm_api_key=key)


@override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A])
def test_the_raw_column_holds_a_token_and_no_secret(workspace):
    agent = _agent_with_key(workspace)
    raw = _raw_value(agent)
    assert SECRET not in _raw_row(agent) and SECRET not in raw
    assert Fernet(KEY_A).decrypt(raw.encode()).decode() == SECRET  # a real token, under the configured key
    assert _reloaded(agent) == SECRET
    # Randomised: the same secret saved twice gives two tokens; updates are sealed too.
    Agent.unscoped.filter(id=agent.id).update(llm_api_key=SECRET)
    assert _raw_value(agent) not in (raw, SECRET) and _reloaded(agent) == SECRET


def test_an_empty_key_stays_empty_so_not_set_is_visible_without_a_key(workspace):
    agent = _agent_with_key(workspace, key="")
    assert _raw_value(agent) == "" and _reloaded(agent) == ""
    assert Agent.unscoped.filter(id=agent.id, llm_api_key="").exists()


def test_rotation_moves_every_value_to_the_first_key_then_the_old_key_can_go(workspace, other_workspace):
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A]):
        ours = _agent_with_key(workspace)
        theirs = _agent_with_key(other_workspace, key="sk-other-workspace")
        empty = _agent_with_key(workspace, key="")
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B]), pytest.raises(SecretUnreadable, match="Put back"):
        _reloaded(ours)  # dropping A before rotating would lose the secrets
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B, KEY_A]):
        assert _reloaded(ours) == SECRET  # the old key still opens old values
        call_command("rotate_secrets", stdout=open(os.devnull, "w"))  # noqa: SIM115
    for agent in (ours, theirs):
        raw = _raw_value(agent).encode()
        assert Fernet(KEY_B).decrypt(raw)
        with pytest.raises(InvalidToken):
            Fernet(KEY_A).decrypt(raw)
    assert _raw_value(empty) == ""
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B]):
        assert _reloaded(ours) == SECRET and _reloaded(theirs) == "sk-other-workspace"


def test_rotation_stops_on_a_value_no_key_opens(workspace):
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A]):
        _agent_with_key(workspace)
    with override_settings(FIELD_ENCRYPTION_KEYS=[KEY_B]), pytest.raises(CommandError, match="llm_api_key"):
        call_command("rotate_secrets", stdout=open(os.devnull, "w"))  # noqa: SIM115


def test_a_malformed_key_is_named_by_position_not_printed():
    bad_keys = override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A, "not-a-fernet-key"])
    with bad_keys, pytest.raises(ImproperlyConfigured, match="key number 2") as caught:
        sealing()
    assert "not-a-fernet-key" not in str(caught.value)


def test_outside_production_a_key_derived_from_secret_key_stands_in_and_production_refuses_it():
    with override_settings(FIELD_ENCRYPTION_KEYS=[], SECRET_KEY="a-dev-secret-key"):
        token = sealing().encrypt(b"x")
    another_secret_key = override_settings(FIELD_ENCRYPTION_KEYS=[], SECRET_KEY="another-dev-secret-key")
    with another_secret_key, pytest.raises(InvalidToken):
        sealing().decrypt(token)  # derived from SECRET_KEY, not a constant
    production = override_settings(FIELD_ENCRYPTION_KEYS=[], FIELD_ENCRYPTION_DERIVED_KEY_ALLOWED=False)
    with production, pytest.raises(ImproperlyConfigured, match="FIELD_ENCRYPTION_KEYS is not set"):
        sealing()


def test_the_production_settings_require_the_keys():
    env = {k: v for k, v in os.environ.items() if k != "FIELD_ENCRYPTION_KEYS"}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.production", DJANGO_SECRET_KEY="x" * 50)
    code = "import django; django.setup()"
    missing = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert missing.returncode != 0 and "FIELD_ENCRYPTION_KEYS" in missing.stderr
    env["FIELD_ENCRYPTION_KEYS"] = KEY_A
    present = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert present.returncode == 0, present.stderr


@pytest.mark.django_db(transaction=True)
@override_settings(FIELD_ENCRYPTION_KEYS=[KEY_A])
def test_the_migration_seals_keys_that_were_stored_in_plain_text(workspace):
    before = ("agents", "0003_agent_auto_sources_agent_context_budget_and_more")
    executor = MigrationExecutor(connection)
    executor.migrate([before])
    try:
        old_agent = executor.loader.project_state(before).apps.get_model("agents", "Agent")
        legacy = old_agent.objects.create(
            workspace_id=workspace.id, name="Legacy", public_key="ag_legacy", llm_api_key=SECRET
        )
        assert _raw_value(legacy) == SECRET  # what the issue found: the key in plain text
    finally:
        # Back to the latest state of every app: going back to agents 0003 also unapplied what depends on it.
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert SECRET not in _raw_row(legacy)
    assert Fernet(KEY_A).decrypt(_raw_value(legacy).encode()).decode() == SECRET
    assert _reloaded(legacy) == SECRET


def test_any_form_of_a_sealed_field_gets_a_write_only_input_whatever_widget_it_asks_for():
    from django import forms

    form_field = Agent._meta.get_field("llm_api_key").formfield(widget=forms.Textarea)
    assert SECRET not in form_field.widget.render("llm_api_key", SECRET)
