"""Who may do what in the web UI, asked directly of the server (no browser): members read, owners and
admins change, and another workspace's agents and sources look like missing ones."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.models import Agent
from sources.models import Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def text_source(workspace, agent):
    return index_text(workspace, agent, "Returns", "Items can be returned within 30 days of delivery.")


def write_requests(agent, source):
    """Every request of the UI that changes something, with a body that would succeed for an owner."""
    upload = SimpleUploadedFile("notes.txt", b"Opening hours are nine to five.", content_type="text/plain")
    return [
        (f"/app/agents/{agent.id}/sources/add", {"kind": "text", "title": "T", "content": "Some text."}),
        (f"/app/agents/{agent.id}/sources/add", {"kind": "upload", "file": upload}),
        (f"/app/agents/{agent.id}/discover", {"domain": "127.0.0.1:9"}),
        (f"/app/agents/{agent.id}/discover/add", {"pages": "[]"}),
        (f"/app/sources/{source.id}/reindex", {}),
        (f"/app/sources/{source.id}/recrawl", {}),
        (f"/app/sources/{source.id}/delete", {}),
        (f"/app/sources/{source.id}/reupload", {}),
        (f"/app/agents/{agent.id}/settings", {"name": "Renamed", "top_k": 3, "retrieval_mode": "inject"}),
        (f"/app/agents/{agent.id}/delete", {"confirm_name": agent.name}),
        ("/app/agents/new", {"name": "Another agent"}),
    ]


def test_a_member_reads_everything_but_every_change_is_refused(client, member, agent, text_source):
    client.force_login(member)
    for path in (
        "/app/",
        f"/app/agents/{agent.id}/sources",
        f"/app/agents/{agent.id}/sources.json",
        f"/app/agents/{agent.id}/test?q=returns",
        f"/app/agents/{agent.id}/settings",
        f"/app/sources/{text_source.id}/preview",
    ):
        assert client.get(path).status_code == 200, path

    for path, data in write_requests(agent, text_source):
        assert client.post(path, data).status_code == 403, path
        assert client.post(path, data, HTTP_ACCEPT="application/json").status_code == 403, path
    assert client.get(f"/app/sources/{text_source.id}/delete").status_code == 403
    assert client.get(f"/app/agents/{agent.id}/delete").status_code == 403

    with workspace_scope(agent.workspace_id):
        assert Source.objects.filter(id=text_source.id, status="done").exists()
        assert list(Source.objects.values_list("title", flat=True)) == ["Returns"]
        assert Agent.objects.get(id=agent.id).name == "Support bot"
        assert Agent.objects.count() == 1


def test_the_member_pages_show_no_buttons_that_change_things(client, member, agent, text_source):
    client.force_login(member)
    sources_page = client.get(f"/app/agents/{agent.id}/sources").content.decode()
    assert "Preview" in sources_page
    for control in ("Add source", "Discover pages", "Reindex", "Recrawl", "data-delete", "add-dialog"):
        assert control not in sources_page, control
    row = client.get(f"/app/agents/{agent.id}/sources.json").json()["rows"][0]["html"]
    assert "Reindex" not in row and "Delete" not in row
    settings_page = client.get(f"/app/agents/{agent.id}/settings").content.decode()
    assert "Save settings" not in settings_page and "data-preview-chat" not in settings_page
    assert 'name="name" value="Support bot" maxlength="200" required disabled' in settings_page
    assert "New agent" not in client.get("/app/").content.decode()


def test_another_workspace_gets_404_for_every_page_and_action(client, outsider, agent, text_source):
    client.force_login(outsider)
    for path in (
        f"/app/agents/{agent.id}/",
        f"/app/agents/{agent.id}/sources",
        f"/app/agents/{agent.id}/sources.json",
        f"/app/agents/{agent.id}/test?q=returns",
        f"/app/agents/{agent.id}/settings",
        f"/app/sources/{text_source.id}/preview",
        f"/app/sources/{text_source.id}/delete",
        f"/app/agents/{agent.id}/delete",
    ):
        response = client.get(path)
        assert response.status_code in (404, 302), path
        if response.status_code == 302:  # /app/agents/{id}/ redirects to the sources page, which is a 404
            assert client.get(response.url).status_code == 404, path
    for path, data in write_requests(agent, text_source)[:-1]:
        assert client.post(path, data).status_code == 404, path
    # Nor can they make the agent's workspace their current one.
    assert client.post("/app/workspace", {"workspace": agent.workspace_id}).status_code == 404


def test_signed_out_visitors_are_sent_to_sign_in(client, agent):
    response = client.get(f"/app/agents/{agent.id}/sources")
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
    assert client.post(f"/app/agents/{agent.id}/sources/add", {"kind": "text"}).status_code == 302


def test_the_switcher_only_switches_to_a_workspace_of_yours(
    client, owner, agent, other_workspace, other_agent
):
    from sources.models import Membership

    client.force_login(owner)
    assert client.post("/app/workspace", {"workspace": other_workspace.id}).status_code == 404
    with workspace_scope(other_workspace.id):
        Membership.objects.create(user=owner, role="member")
    page = client.get("/app/").content.decode()
    assert 'id="workspace-switch"' in page and "Support bot" in page and "Globex bot" not in page
    assert client.post("/app/workspace", {"workspace": other_workspace.id}).status_code == 302
    page = client.get("/app/").content.decode()
    assert "Globex bot" in page and "Support bot" not in page
    assert "New agent" not in page  # a member there


def test_without_javascript_a_refused_source_comes_back_with_the_dialog_open(client, owner, agent):
    client.force_login(owner)
    response = client.post(
        f"/app/agents/{agent.id}/sources/add", {"kind": "url", "url": "ftp://example.com/", "title": "Manual"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert '<dialog id="add-dialog" class="modal" aria-labelledby="add-title" open>' in page
    assert "Only web addresses starting with http:// or https:// can be fetched." in page
    assert 'value="Manual"' in page  # what was typed is kept

    response = client.post(
        f"/app/agents/{agent.id}/sources/add", {"kind": "text", "title": "Hours", "content": "Nine to five."}
    )
    assert response.status_code == 302 and response.url == f"/app/agents/{agent.id}/sources"
    with workspace_scope(agent.workspace_id):
        source = Source.objects.get(title="Hours")
    confirm = client.get(f"/app/sources/{source.id}/delete").content.decode()
    assert "This removes <strong>Hours</strong> with its 1 page and 0 chunks" in confirm
    assert client.post(f"/app/sources/{source.id}/delete").status_code == 302
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.filter(title="Hours").exists()


def test_the_model_key_is_kept_unless_replaced_or_removed(client, owner, agent):
    client.force_login(owner)
    settings_url = f"/app/agents/{agent.id}/settings"
    form = {"name": "Support bot", "retrieval_mode": "inject", "top_k": 4, "hybrid": "on"}
    assert client.post(settings_url, {**form, "llm_api_key": "sk-first"}).status_code == 302
    page = client.get(settings_url).content.decode()
    assert "sk-first" not in page and "A key is saved" in page
    assert client.post(settings_url, form).status_code == 302
    agent.refresh_from_db()
    assert agent.llm_api_key == "sk-first"
    assert client.post(settings_url, {**form, "clear_llm_api_key": "on"}).status_code == 302
    agent.refresh_from_db()
    assert agent.llm_api_key == ""
    response = client.post(settings_url, {**form, "top_k": 99, "min_score": 2})
    assert response.status_code == 200
    assert "Use between 1 and 20 passages." in response.content.decode()
    assert "Scores run from 0 to 1" in response.content.decode()


def test_deleting_an_agent_takes_its_sources_index_and_conversations_and_nothing_else(
    client, owner, workspace, agent, text_source
):
    from agents.models import Conversation
    from agents.services import agent_create, start_conversation
    from config.backends import vector_stores
    from retrieval.models import KeywordPosting
    from sources.models import Chunk

    kept_agent = agent_create(workspace=workspace, name="Sales bot")
    kept = index_text(workspace, kept_agent, "Prices", "The kettle costs forty euros.")
    start_conversation(agent=agent)
    client.force_login(owner)
    page = client.get(f"/app/agents/{agent.id}/delete").content.decode()
    assert "1 source" in page and "Type <strong>Support bot</strong> to confirm" in page

    # The name must be typed back; nothing is deleted until it is.
    refused = client.post(f"/app/agents/{agent.id}/delete", {"confirm_name": "support"})
    assert refused.status_code == 400 and "exactly to confirm" in refused.content.decode()
    with workspace_scope(workspace.id):
        assert Agent.objects.filter(id=agent.id).exists()

    response = client.post(f"/app/agents/{agent.id}/delete", {"confirm_name": "Support bot"})
    assert response.status_code == 302 and response.url == "/app/"
    with workspace_scope(workspace.id):
        assert not Agent.objects.filter(id=agent.id).exists()
        assert not Source.objects.filter(id=text_source.id).exists()
        assert not Chunk.objects.filter(source_id=text_source.id).exists()
        assert not Conversation.objects.filter(agent_id=agent.id).exists()
        # The other agent keeps everything: rows, vectors and keyword postings.
        kept_chunks = list(Chunk.objects.filter(source_id=kept.id).values_list("id", flat=True))
        assert kept_chunks and KeywordPosting.objects.filter(chunk_id__in=kept_chunks).exists()
        postings = KeywordPosting.objects
        assert postings.count() == postings.filter(chunk_id__in=kept_chunks).count()
    assert vector_stores["default"].count(workspace_id=workspace.id) == len(kept_chunks)
