"""The operators' Django admin: every workspace, actions through the services, the stuck-work view."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agents.models import Agent
from retrieval.models import KeywordPosting
from sources.models import Chunk, Document, Source
from sources.tenancy import workspace_scope
from tests.factories import index_text

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client):
    user = get_user_model().objects.create_superuser("ops", "ops@example.com", "pw-for-tests-123")
    client.force_login(user)
    return client


def act(client, action, *ids):
    return client.post(
        "/admin/sources/source/", {"action": action, "_selected_action": [str(i) for i in ids]}, follow=True
    )


def test_sources_of_every_workspace_are_listed_and_filterable(
    operator, workspace, other_workspace, agent, other_agent
):
    index_text(workspace, agent, "Acme returns", "Return within 30 days.")
    index_text(other_workspace, other_agent, "Globex returns", "Return within 60 days.")
    page = operator.get("/admin/sources/source/").content.decode()
    assert "Acme returns" in page and "Globex returns" in page
    page = operator.get(f"/admin/sources/source/?workspace__id__exact={other_workspace.id}").content.decode()
    assert "Globex returns" in page and "Acme returns" not in page
    assert "Globex returns" in operator.get("/admin/sources/source/?q=Globex").content.decode()


def test_delete_action_removes_chunks_points_and_postings(operator, workspace, agent):
    source = index_text(workspace, agent, "Doomed", "Everything here will be deleted soon.")
    assert KeywordPosting.unscoped.exists()
    response = act(operator, "delete_everywhere", source.id)
    assert response.status_code == 200
    assert (
        not Source.unscoped.exists() and not Chunk.unscoped.exists() and not KeywordPosting.unscoped.exists()
    )


def test_reindex_and_cancel_actions(operator, workspace, agent, django_capture_on_commit_callbacks):
    done = index_text(workspace, agent, "Kept", "Some text to reindex.")
    with django_capture_on_commit_callbacks() as queued:
        act(operator, "reindex", done.id)
    assert len(queued) == 1 and Source.unscoped.get(id=done.id).status == "pending"

    with workspace_scope(workspace.id):
        busy = Source.objects.create(
            agent=agent,
            kind="url",
            title="Busy",
            config={"url": "http://x.test/"},
            status="crawling",
            pages_total=1,
        )
        Document.objects.create(source=busy, url="http://x.test/", status="crawling")
    act(operator, "cancel", busy.id)
    busy.refresh_from_db()
    assert busy.status == "failed" and busy.error == "Cancelled by an operator."
    assert Document.unscoped.get(source=busy).error == "Cancelled by an operator."


def test_the_stuck_work_view_lists_what_ran_too_long(operator, workspace, agent, settings):
    settings.STUCK_AFTER = 60
    with workspace_scope(workspace.id):
        stuck = Source.objects.create(
            agent=agent, kind="url", title="Stuck crawl", config={"url": "http://x.test/"}, status="crawling"
        )
        Source.objects.create(
            agent=agent, kind="url", title="Fresh crawl", config={"url": "http://y.test/"}, status="crawling"
        )
    Source.unscoped.filter(id=stuck.id).update(updated_at=timezone.now() - timezone.timedelta(minutes=5))
    page = operator.get("/admin/sources/source/stuck/").content.decode()
    assert "Stuck crawl" in page and "Fresh crawl" not in page


def test_a_member_of_a_workspace_is_not_an_operator(client, member):
    client.force_login(member)
    assert client.get("/admin/sources/source/").status_code == 302  # to the admin sign-in


def test_the_agent_form_refuses_a_template_without_context_and_warns_without_a_guard(
    operator, workspace, agent
):
    url = f"/admin/agents/agent/{agent.id}/change/"
    form = operator.get(url).context["adminform"].form
    data = {k: v for k, v in form.initial.items() if v is not None}
    data.update(
        workspace=workspace.id,
        allowed_origins='["https://acme.example"]',
        context_template="No passages here",
    )
    response = operator.post(url, data)
    assert response.status_code == 200 and "must contain {context}" in response.content.decode()
    data["context_template"] = "Facts:\n{context}"
    response = operator.post(url, data, follow=True)
    assert "ignore instructions" in response.content.decode()
    assert Agent.unscoped.get(id=agent.id).context_template == "Facts:\n{context}"


@pytest.fixture(params=["pgvector", "qdrant"])
def vector_store(request, settings):
    """Each delete is checked against both stores: Qdrant's points live outside the database."""
    from config.backends import vector_stores

    if request.param == "qdrant":
        settings.VECTOR_STORES = {
            "default": {
                "BACKEND": "retrieval.stores.qdrant.QdrantStore",
                "OPTIONS": {"location": ":memory:", "collection": "admin_delete_tests"},
            }
        }
    return vector_stores["default"]


def stored_knowledge(workspace, agent):
    """A text source and an uploaded file, indexed: rows, postings, vector points and stored files."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from ingestion.lifecycle import source_index_now, upload_create

    index_text(workspace, agent, "Returns", "Return any kettle within 30 days of purchase.")
    upload = SimpleUploadedFile("care.txt", b"Descale the kettle every four weeks with citric acid.")
    (source,) = upload_create(workspace=workspace, agent_id=agent.id, files=[upload])
    source_index_now(source=source)
    with workspace_scope(workspace.id):
        source.refresh_from_db()
    assert source.status == "done", source.error
    return source


def assert_nothing_left(vector_store, workspace_id, media_root):
    assert not Source.unscoped.filter(workspace_id=workspace_id).exists()
    assert not Document.unscoped.filter(workspace_id=workspace_id).exists()
    assert not Chunk.unscoped.filter(workspace_id=workspace_id).exists()
    assert not KeywordPosting.unscoped.filter(workspace_id=workspace_id).exists()
    assert vector_store.count(workspace_id=workspace_id) == 0
    uploads = media_root / "uploads" / str(workspace_id)
    assert not uploads.exists() or not any(p.is_file() for p in uploads.rglob("*"))


def test_deleting_an_agent_in_the_admin_goes_through_the_services(
    operator,
    vector_store,
    workspace,
    agent,
    other_workspace,
    other_agent,
    settings,
    django_capture_on_commit_callbacks,
):
    from pathlib import Path

    stored_knowledge(workspace, agent)
    kept = index_text(other_workspace, other_agent, "Theirs", "Another workspace's kettle returns policy.")
    assert vector_store.count(workspace_id=workspace.id) > 0
    with django_capture_on_commit_callbacks(execute=True):  # files go once the delete commits
        response = operator.post(f"/admin/agents/agent/{agent.id}/delete/", {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert not Agent.unscoped.filter(id=agent.id).exists()
    assert_nothing_left(vector_store, workspace.id, Path(settings.MEDIA_ROOT))
    assert Source.unscoped.filter(id=kept.id).exists()
    assert vector_store.count(workspace_id=other_workspace.id) > 0


def test_deleting_workspaces_in_the_admin_bulk_action_leaves_no_orphan(
    operator,
    vector_store,
    workspace,
    agent,
    other_workspace,
    other_agent,
    settings,
    django_capture_on_commit_callbacks,
):
    from pathlib import Path

    from sources.models import Workspace

    stored_knowledge(workspace, agent)
    index_text(other_workspace, other_agent, "Theirs", "Another workspace's kettle returns policy.")
    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(
            "/admin/sources/workspace/",
            {"action": "delete_selected", "_selected_action": [str(workspace.id)], "post": "yes"},
            follow=True,
        )
    assert response.status_code == 200
    assert not Workspace.objects.filter(id=workspace.id).exists()
    assert_nothing_left(vector_store, workspace.id, Path(settings.MEDIA_ROOT))
    assert vector_store.count(workspace_id=other_workspace.id) > 0


def test_a_source_its_page_and_a_chunk_open_for_editing_in_their_own_workspace(
    operator, workspace, other_workspace, agent, other_agent
):
    """Their forms name rows of the workspace (an agent, a source, a document): the page opens in that
    workspace's scope, and another workspace's agent is refused as a source's agent."""
    source = index_text(workspace, agent, "Acme returns", "Return within 30 days.")
    with workspace_scope(workspace.id):
        document = Document.objects.get(source=source)
        chunk = Chunk.objects.get(source=source)
    for url in (
        f"/admin/sources/source/{source.id}/change/",
        f"/admin/sources/document/{document.id}/change/",
        f"/admin/sources/chunk/{chunk.id}/change/",
    ):
        page = operator.get(url)
        assert page.status_code == 200, url
        assert "Acme returns" in page.content.decode()
    assert operator.get("/admin/sources/chunk/not-a-uuid/change/", follow=True).status_code == 200
    form = operator.get(f"/admin/sources/source/{source.id}/change/").context["adminform"].form
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    response = operator.post(f"/admin/sources/source/{source.id}/change/", {**data, "agent": other_agent.id})
    assert response.status_code == 200 and "agent" in response.context["adminform"].form.errors
    assert Source.unscoped.get(id=source.id).agent_id == agent.id


def test_skipped_pages_show_apart_from_failed_ones_with_their_reason_and_size(
    operator, workspace, agent, django_capture_on_commit_callbacks
):
    """Nothing is dropped without the operator seeing it: a source's skipped count and reasons, each
    skipped page's reason in words and the size of its text, a filter by reason, and "Index anyway"."""
    from tests.factories import make_skipped_site, skipped_page

    source = make_skipped_site(
        workspace, agent, title="Docs site", config={"url": "http://docs.test/"}, short_chars=17, detail=False
    )
    listing = operator.get("/admin/sources/source/").context["cl"]
    assert "pages_skipped" in listing.list_display
    page = operator.get("/admin/sources/source/").content.decode()
    assert '<td class="field-pages_skipped">3</td>' in page
    page = operator.get(f"/admin/sources/source/{source.id}/change/").content.decode()
    assert "2 too little text, 1 only a list of links" in page

    response = operator.get("/admin/sources/document/?status__exact=skipped")
    assert sorted(d.url for d in response.context["cl"].result_list) == [
        f"http://docs.test/short/{i}" for i in range(3)
    ]
    page = response.content.decode()
    assert '<td class="field-skipped_as">too little text</td>' in page
    assert '<td class="field-skipped_as">only a list of links</td>' in page
    assert '<td class="field-skipped_chars">900</td>' in page
    response = operator.get("/admin/sources/document/?skip_reason=link_list")
    assert [d.url for d in response.context["cl"].result_list] == ["http://docs.test/short/2"]
    page = response.content.decode()
    assert "?skip_reason=search_page" in page  # every reason is offered, in words
    link_list = skipped_page(source, 2)
    page = operator.get(f"/admin/sources/document/{link_list.id}/change/").content.decode()
    assert "link_list" in page and "900" in page

    done = Document.unscoped.get(source_id=source.id, url="http://docs.test/ok/0")
    with django_capture_on_commit_callbacks() as queued:
        response = operator.post(
            "/admin/sources/document/",
            {"action": "index_anyway", "_selected_action": [str(link_list.id), str(done.id)]},
            follow=True,
        )
    page = response.content.decode()
    assert "Indexing 1 of 2 pages anyway." in page and "Only a skipped page can be indexed anyway" in page
    assert len(queued) == 1
    link_list = skipped_page(source, 2)
    assert (link_list.status, link_list.keep_short) == ("pending", True)
    assert Document.unscoped.get(id=done.id).status == "done"
