"""The doctor, with each fault provoked on real services: a closed port for Redis, the broker and the vector
store, no worker, a model server answering 401, an embedder of another size, a failed source, an overdue
sync, passages of another embedding model, an empty knowledge base, a half-set gate, no origins."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from agents import doctor
from sources.models import Chunk, Schedule, Source, Status
from sources.tenancy import workspace_scope
from tests.factories import ROOT
from tests.fakes.openai_server import FakeProvider, openai_compatible_server

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def by_check(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["check"], []).append(finding)
    return found


@pytest.fixture
def healthy(agent, knowledge, llm_agent):
    with workspace_scope(agent.workspace_id):
        agent.min_score = 0.2
        agent.offtopic_reply = "I only know about kettles and shipping."
        agent.save()
    return agent


@pytest.mark.worker
def test_a_healthy_agent_has_no_findings_and_the_model_is_called_once(healthy, provider, celery_worker):
    report = doctor.diagnose(agent=healthy)
    assert report == {"status": "ok", "checks": report["checks"], "findings": []}, report
    assert report["checks"] == [
        "embedder",
        "services",
        "model",
        "agent_embedder",
        "sources",
        "embeddings",
        "knowledge",
        "gate",
        "origins",
    ]
    [call] = provider.chat_requests()
    assert call["max_tokens"] == 1 and call["model"] == "fake-chat"


def test_dead_services_are_each_named_with_what_to_do(agent, knowledge):
    port = closed_port()
    down_store = {
        "default": {
            "BACKEND": "retrieval.stores.qdrant.QdrantStore",
            "OPTIONS": {"url": f"http://127.0.0.1:{port}"},
        }
    }
    with override_settings(
        REDIS_URL=f"redis://127.0.0.1:{port}/0",
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/1",
        VECTOR_STORES=down_store,
    ):
        report = doctor.diagnose(agent=agent, operator=True)
        members_view = doctor.diagnose(agent=agent)
    found = by_check(report)
    assert report["status"] == "error"
    # Workspace members learn what is wrong, not the deployment's addresses.
    assert {f["check"] for f in members_view["findings"]} == {f["check"] for f in report["findings"]}
    assert all(f["detail"] == "" for f in members_view["findings"] if f["check"] != "model")
    for name in ("redis", "broker", "vector_store"):
        [finding] = found[name]
        assert finding["severity"] == "error" and finding["action"], finding
    assert "ConnectionError" in found["redis"][0]["detail"]
    assert "REDIS_URL" in found["redis"][0]["action"]
    assert found["redis"][0]["problem"] == "Redis does not answer."
    assert "Qdrant" in found["vector_store"][0]["detail"]
    # The store being down also means its index size cannot be read; said, not hidden.
    assert found["embedder"][0]["severity"] == "warning"
    assert "database" not in found  # PostgreSQL is up


def _doctor_process(**overrides: str) -> subprocess.Popen:
    """`manage.py doctor --json` in its own process on the test database. Its settings (local) have no
    broker key prefix, so no test worker (they use this session's prefix) answers it: the no-worker case."""
    db = settings.DATABASES["default"]
    redis_server = settings.REDIS_URL.rsplit("/", 1)[0]
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        REDIS_URL=f"{redis_server}/15",
        CELERY_BROKER_URL=f"{redis_server}/14",
        VECTOR_STORE_BACKEND="retrieval.stores.pgvector.PgVectorStore",
        LOG_LEVEL="CRITICAL",
    )
    env.update(overrides)
    command = [sys.executable, "manage.py", "doctor", "--json"]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _finish(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err.decode()[-2000:]  # an error finding fails the command
    return json.loads(out)


def test_the_command_names_a_missing_worker_and_a_dead_broker(django_db_setup):
    port = closed_port()
    no_worker = _doctor_process()
    broker_down = _doctor_process(CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0")
    found = by_check(_finish(no_worker))
    assert set(found) == {"workers"}, found
    # The broadcast names the queues nobody consumes, or says nothing answered within its bound.
    problem = found["workers"][0]["problem"]
    assert "crawl, index" in problem or "no answer in time" in problem, problem
    assert "-Q crawl,index" in found["workers"][0]["action"]
    found = by_check(_finish(broker_down))
    assert set(found) == {"broker", "workers"}, found
    assert "CELERY_BROKER_URL" in found["broker"][0]["action"]


def test_a_model_server_answering_401_says_to_fix_the_key(llm_agent, knowledge, provider):
    with workspace_scope(llm_agent.workspace_id):
        llm_agent.llm_api_key = "sk-wrong"
        llm_agent.save()
    [finding] = doctor.check_model(llm_agent)
    assert finding.severity == "error"
    assert finding.problem == "The model provider rejected the API key."
    assert "API key" in finding.action and "Incorrect API key" in finding.detail


def test_an_unreachable_or_half_set_model_is_reported(agent):
    agent.llm_base_url, agent.llm_model = f"http://127.0.0.1:{closed_port()}/v1", "m"
    [finding] = doctor.check_model(agent)
    assert finding.severity == "error" and "could not be called" in finding.problem
    assert "base URL" in finding.action
    agent.llm_model = ""
    [finding] = doctor.check_model(agent)
    assert finding.severity == "warning" and "no model name" in finding.problem
    agent.llm_base_url = ""
    assert doctor.check_model(agent) == []  # the built-in answerer: nothing to call


def test_an_embedder_of_another_size_is_reported():
    with openai_compatible_server(FakeProvider(dimensions=128)) as provider:
        options = {"base_url": provider.base_url, "model": "small", "api_key": provider.api_key}
        backend = "retrieval.embedders.openai.OpenAIEmbedder"
        with override_settings(EMBEDDERS={"default": {"BACKEND": backend, "OPTIONS": options}}):
            [finding] = doctor.check_embedder()
        # The embedder checks its own vectors' size; the doctor passes its words on.
        assert "wrong size" in finding.problem and "dimensions" in finding.action
        assert finding.detail == "expected (1, 384), got (1, 128)"
        sized = {**options, "dimensions": 128}
        with override_settings(EMBEDDERS={"default": {"BACKEND": backend, "OPTIONS": sized}}):
            [finding] = doctor.check_embedder()
        assert "the index holds 384" in finding.problem and "reindex" in finding.action
        wrong_key = {**options, "api_key": "sk-wrong"}
        with override_settings(EMBEDDERS={"default": {"BACKEND": backend, "OPTIONS": wrong_key}}):
            [finding] = doctor.check_embedder()
        assert finding.severity == "error" and "rejected the API key" in finding.problem
    assert doctor.check_embedder() == []  # the deployment's own embedder matches the pgvector column


def test_failed_overdue_and_badly_synced_sources_are_listed_with_reasons(workspace, agent, knowledge):
    kettle, shipping = knowledge
    with workspace_scope(workspace.id):
        Source.objects.filter(id=kettle.id).update(status=Status.FAILED, error="The page answered 404.")
        Source.objects.filter(id=shipping.id).update(
            schedule=Schedule.DAILY,
            next_sync_at=timezone.now() - timedelta(hours=3),
            last_sync={"failed": 2, "added": 0},
        )
        findings = doctor.check_sources(agent)
    failed, overdue, synced = findings
    assert failed.severity == "error" and "Kettle care" in failed.problem
    assert "The page answered 404." in failed.problem
    assert overdue.severity == "warning" and "Shipping" in overdue.problem and "beat" in overdue.action
    assert synced.severity == "warning" and "2 page(s) failed" in synced.problem
    with workspace_scope(workspace.id):
        Source.objects.filter(id=shipping.id).update(next_sync_at=timezone.now() - timedelta(minutes=5))
        Source.objects.filter(id=shipping.id).update(last_sync={"failed": 0})
        Source.objects.filter(id=kettle.id).update(status=Status.DONE, error="")
        assert doctor.check_sources(agent) == []  # due a few minutes ago is the beat's normal delay


def test_passages_of_another_model_need_a_reindex(workspace, agent, knowledge):
    with workspace_scope(workspace.id):
        assert doctor.check_embeddings(agent) == []
        Chunk.objects.filter(source=knowledge[0]).update(embedding_model="old-model")
        [finding] = doctor.check_embeddings(agent)
        stale = Chunk.objects.filter(source=knowledge[0]).count()
    assert finding.problem.startswith(f"{stale} passage(s)") and "reindex" in finding.action


def test_an_empty_or_hidden_knowledge_base_is_reported(workspace, agent):
    from tests.factories import index_text

    with workspace_scope(workspace.id):
        [finding] = doctor.check_knowledge(agent)
        assert finding.severity == "error" and "no sources" in finding.problem
    source = index_text(workspace, agent, "Kettle", "Kettles have a two-year warranty.")
    with workspace_scope(workspace.id):
        assert doctor.check_knowledge(agent) == []
        Source.objects.filter(id=source.id).update(paused=True, hidden_while_paused=True)
        [finding] = doctor.check_knowledge(agent)
        assert "paused and hidden" in finding.problem
        Chunk.objects.all().delete()
        Source.objects.filter(id=source.id).update(paused=False)
        [finding] = doctor.check_knowledge(agent)
        assert "empty" in finding.problem and finding.severity == "error"


def test_a_half_set_gate_and_missing_origins_are_reported(agent):
    assert doctor.check_gate(agent) == [] and doctor.check_origins(agent) == []
    agent.min_score = 0.3
    [finding] = doctor.check_gate(agent)
    assert "no off-topic reply" in finding.problem
    agent.min_score, agent.offtopic_reply = None, "Only kettles."
    [finding] = doctor.check_gate(agent)
    assert "never used" in finding.problem
    agent.allowed_origins = []
    [finding] = doctor.check_origins(agent)
    assert "allowed origins are empty" in finding.problem


def test_the_command_prints_findings_and_fails_on_errors(agent, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("doctor", "--agent", str(agent.id))
    assert exited.value.code == 1
    out = capsys.readouterr().out
    assert "[knowledge] The agent has no sources" in out and "To do: Add a source" in out
    with pytest.raises(SystemExit):
        call_command("doctor", "--agent", str(agent.id), "--json")
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "error" and "knowledge" in report["checks"]
