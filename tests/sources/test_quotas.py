"""Plans and quotas: every quota refused at its edge with the documented 402 (or 429), nothing stored or
queued; the default plan; usage against the plan in the API and the admin."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.models import Agent, Conversation, Message
from sources import access, quotas
from sources.models import Membership, Plan, Source
from sources.plans import assign_plan, plan_for
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db
ORIGIN = "https://acme.example"


@pytest.fixture
def on_plan(workspace):
    """on_plan(**limits): put `workspace` on a new plan with those limits."""

    def put(**limits):
        plan = Plan.objects.create(name="tight", label="Tight", **limits)
        assign_plan(workspace, "tight")
        return plan

    return put


def text_body(agent, content="You can return items within 30 days.", **extra):
    return {"kind": "text", "title": "Returns", "content": content, "agent": agent.id, **extra}


def sources_of(workspace):
    with workspace_scope(workspace.id):
        return Source.objects.count()


def assert_refused(response, quota, *, limit, usage, reset=None):
    assert response.status_code == 402, response.content
    error = response.json()["error"]
    assert error["code"] == "quota_exceeded" and error["quota"] == quota
    assert (error["limit"], error["usage"]) == (limit, usage)
    assert error["reset"] == reset
    assert error["message"].startswith("Your plan allows")
    return error


# --- the default plan --------------------------------------------------------------------------------


def test_a_workspace_without_a_plan_is_on_the_default_plan_from_settings(workspace, settings):
    assert workspace.plan is None
    plan = plan_for(workspace)
    assert plan.name == settings.GROUNDED_DEFAULT_PLAN == "default"  # made by migration 0012
    assert all(quotas.limit_of(plan, name) is None for name in quotas.QUOTAS)  # no limits until edited
    plan.max_sources = 0
    plan.save()
    with pytest.raises(quotas.QuotaExceeded):  # an operator's edit of the default plan reaches everyone
        quotas.check(workspace, "sources")


def test_a_missing_default_plan_is_made_again_without_limits_and_the_admin_cannot_delete_it(
    workspace, settings, client, caplog
):
    from django.contrib.auth import get_user_model

    settings.GROUNDED_DEFAULT_PLAN = "renamed"
    assert plan_for(workspace).name == "renamed" and "was missing" in caplog.text
    operator = get_user_model().objects.create_superuser("operator", "op@example.com", "pw")
    client.force_login(operator)
    plan = Plan.objects.get(name="renamed")
    assert client.post(f"/admin/sources/plan/{plan.id}/delete/", {"post": "yes"}).status_code == 403
    assert Plan.objects.filter(name="renamed").exists()


# --- stock quotas through the API --------------------------------------------------------------------


def test_sources_quota_refuses_the_one_over_with_nothing_stored_or_queued(
    api, agent, workspace, on_plan, django_capture_on_commit_callbacks
):
    on_plan(max_sources=1)
    assert api.post("/api/v1/sources", text_body(agent), format="json").status_code == 201
    with django_capture_on_commit_callbacks() as queued:
        response = api.post("/api/v1/sources", text_body(agent), format="json")
    assert_refused(response, "sources", limit=1, usage=1)
    assert queued == [] and sources_of(workspace) == 1


def test_documents_quota(api, agent, workspace, on_plan):
    on_plan(max_documents=1)
    assert api.post("/api/v1/sources", text_body(agent), format="json").status_code == 201
    assert_refused(
        api.post("/api/v1/sources", text_body(agent), format="json"), "documents", limit=1, usage=1
    )
    assert sources_of(workspace) == 1


def test_stored_bytes_quota_counts_what_the_request_brings(api, agent, workspace, on_plan):
    on_plan(max_stored_bytes=2000)
    assert api.post("/api/v1/sources", text_body(agent, "short"), format="json").status_code == 201
    used = quotas.usage_of(workspace.id, "stored_bytes")
    assert 0 < used < 200
    response = api.post("/api/v1/sources", text_body(agent, "x" * 3000), format="json")
    assert_refused(response, "stored_bytes", limit=2000, usage=used)
    assert sources_of(workspace) == 1


def test_chunks_quota_leaves_no_room_once_reached(api, agent, workspace, on_plan):
    on_plan(max_chunks=0)
    assert_refused(api.post("/api/v1/sources", text_body(agent), format="json"), "chunks", limit=0, usage=0)
    assert sources_of(workspace) == 0


def test_uploads_count_every_file_before_any_is_stored(api, agent, workspace, on_plan):
    on_plan(max_sources=1)
    files = [SimpleUploadedFile(f"n{i}.txt", b"hello there", content_type="text/plain") for i in range(2)]
    response = api.post("/api/v1/sources", {"kind": "upload", "agent": agent.id, "file": files})
    error = assert_refused(response, "sources", limit=1, usage=0)
    assert "would add 2" in error["message"]
    assert sources_of(workspace) == 0  # files are stored only under a source row


def test_crawl_pages_quota_refuses_a_web_source_when_today_is_used_up(api, agent, workspace, on_plan):
    on_plan(max_crawl_pages_per_day=3)
    assert quotas.take(workspace, "crawl_pages", 5) == 3  # partial grant: as many as the plan leaves
    response = api.post(
        "/api/v1/sources", {"kind": "url", "url": "https://example.com/", "agent": agent.id}, format="json"
    )
    tomorrow = dt.datetime.combine(dt.datetime.now(dt.UTC).date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    error = assert_refused(response, "crawl_pages", limit=3, usage=3, reset=int(tomorrow.timestamp()))
    assert "resets tomorrow" in error["message"]
    retry_after = int(response["Retry-After"])
    assert 0 < retry_after <= 24 * 3600
    assert sources_of(workspace) == 0


def test_agents_quota_in_the_api(api, agent, workspace, on_plan):
    on_plan(max_agents=1)
    response = api.post("/api/v1/agents", {"name": "Second"}, format="json")
    assert_refused(response, "agents", limit=1, usage=1)
    with workspace_scope(workspace.id):
        assert Agent.objects.count() == 1


def test_members_quota_is_checked_before_adding(workspace, owner, on_plan):
    on_plan(max_members=1)
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("newcomer", "new@acme.example")
    actor = Membership.unscoped.get(user=owner)
    with pytest.raises(quotas.QuotaExceeded) as refused:
        access.member_add(actor=actor, identifier="newcomer", role="member")
    assert (refused.value.quota, refused.value.limit, refused.value.usage) == ("members", 1, 1)
    with workspace_scope(workspace.id):
        assert Membership.objects.count() == 1
    # What the invitations code calls, counting its pending invitations in `adding`.
    with pytest.raises(quotas.QuotaExceeded):
        quotas.check_members(workspace, adding=1)
    Plan.objects.filter(name="tight").update(max_members=3)
    quotas.check_members(workspace, adding=2)
    with pytest.raises(quotas.QuotaExceeded):
        quotas.check_members(workspace, adding=3)


def test_chat_messages_quota_with_its_monthly_reset(client, agent, workspace, on_plan):
    on_plan(max_chat_messages_per_month=1)
    path = f"/api/v1/agents/{agent.public_key}/chat"
    first = client.post(path, {"message": "hi"}, content_type="application/json", HTTP_ORIGIN=ORIGIN)
    assert first.status_code == 200, first.content
    with workspace_scope(workspace.id):
        stored = (Conversation.objects.count(), Message.objects.count())
    second = client.post(path, {"message": "again"}, content_type="application/json", HTTP_ORIGIN=ORIGIN)
    first_of_next_month = (dt.datetime.now(dt.UTC).date().replace(day=1) + dt.timedelta(days=32)).replace(
        day=1
    )
    reset = dt.datetime.combine(first_of_next_month, dt.time(), dt.UTC)
    assert_refused(second, "chat_messages", limit=1, usage=1, reset=int(reset.timestamp()))
    with workspace_scope(workspace.id):
        assert (Conversation.objects.count(), Message.objects.count()) == stored  # nothing stored


# --- the API rate from the plan ----------------------------------------------------------------------


def test_the_plan_sets_each_keys_rate_with_headers(api, workspace, on_plan):
    on_plan(api_requests_per_minute=2)
    answers = [api.get("/api/v1/workspace/usage") for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert all(a["RateLimit-Limit"] == "2" and a["RateLimit-Policy"] == "2;w=60" for a in answers)
    refused = answers[-1]
    assert refused["RateLimit-Remaining"] == "0" and 0 < int(refused["Retry-After"]) <= 60
    error = refused.json()["error"]
    assert error["code"] == "rate_limited" and (error["limit"], error["usage"]) == (2, 3)


def test_a_plan_without_an_api_rate_keeps_the_deployments(api, settings):
    settings.API_RATE_PER_MINUTE = 7
    assert api.get("/api/v1/workspace/usage")["RateLimit-Limit"] == "7"


# --- usage ---------------------------------------------------------------------------------------------


def test_usage_endpoint_reports_the_plan_and_each_quota(api, agent, workspace, on_plan):
    on_plan(max_sources=10, max_chat_messages_per_month=100)
    assert api.post("/api/v1/sources", text_body(agent), format="json").status_code == 201
    quotas.take(workspace, "chat_messages", 4)
    body = api.get("/api/v1/workspace/usage").json()
    assert body["plan"] == "tight" and body["plan_label"] == "Tight"
    lines = {line["quota"]: line for line in body["quotas"]}
    assert set(lines) == set(quotas.QUOTAS)
    assert (lines["sources"]["used"], lines["sources"]["limit"]) == (1, 10)
    assert (lines["documents"]["used"], lines["documents"]["limit"]) == (1, None)
    assert lines["agents"]["used"] == 1 and lines["sources"]["reset"] is None
    assert lines["chat_messages"]["used"] == 4 and lines["chat_messages"]["reset"].endswith("+00:00")


def test_an_outsider_sees_only_their_own_workspaces_usage(api, outsider_api, agent, workspace):
    assert api.post("/api/v1/sources", text_body(agent), format="json").status_code == 201
    mine = {line["quota"]: line["used"] for line in api.get("/api/v1/workspace/usage").json()["quotas"]}
    theirs = {
        line["quota"]: line["used"] for line in outsider_api.get("/api/v1/workspace/usage").json()["quotas"]
    }
    assert mine["sources"] == 1 and theirs["sources"] == 0 and theirs["agents"] == 0
    assert outsider_api.get(f"/api/v1/sources/{Source.unscoped.get().id}").status_code == 404


def test_the_admin_shows_usage_and_the_top_workspaces(client, workspace, other_workspace, agent, api):
    from django.contrib.auth import get_user_model

    for _ in range(2):
        assert api.post("/api/v1/sources", text_body(agent), format="json").status_code == 201
    operator = get_user_model().objects.create_superuser("operator", "op@example.com", "pw")
    client.force_login(operator)
    page = client.get(f"/admin/sources/workspace/{workspace.id}/change/").content.decode()
    assert "Usage against the plan" in page and 'data-quota="sources"' in page
    top = client.get("/admin/sources/workspace/top/?by=sources").content.decode()
    assert top.index('data-workspace="acme"') < top.index('data-workspace="globex"')
    assert client.get("/admin/sources/workspace/top/").status_code == 200


# --- the web UI ----------------------------------------------------------------------------------------


def test_web_add_is_refused_next_to_the_button_and_in_a_banner(client, owner, agent, workspace, on_plan):
    on_plan(max_sources=0)
    client.force_login(owner)
    url = f"/app/agents/{agent.id}/sources/add"
    body = {"kind": "text", "title": "Returns", "content": "Thirty days."}
    scripted = client.post(url, body, content_type="application/json", HTTP_ACCEPT="application/json")
    assert scripted.status_code == 402
    assert scripted.json()["__all__"][0].startswith("Your plan allows 0 sources")
    form = client.post(url, body)
    assert form.status_code == 402
    page = form.content.decode()
    assert 'class="flash-msg error"' in page  # the banner
    assert page.count("Your plan allows 0 sources") == 2  # and again beside "Add source"
    assert sources_of(workspace) == 0


def test_web_new_agent_is_refused_with_a_banner(client, owner, agent, workspace, on_plan):
    on_plan(max_agents=1)
    client.force_login(owner)
    response = client.post("/app/agents/new", {"name": "Second"}, follow=True)
    assert "Your plan allows 1 agent;" in response.content.decode()
    with workspace_scope(workspace.id):
        assert Agent.objects.count() == 1


def test_web_member_add_is_refused_with_the_message(client, owner, workspace, on_plan):
    from django.contrib.auth import get_user_model

    on_plan(max_members=1)
    get_user_model().objects.create_user("newcomer", "new@acme.example")
    client.force_login(owner)
    response = client.post("/app/workspace/members/add", {"identifier": "newcomer", "role": "member"})
    assert response.status_code == 402 and "Your plan allows 1 member;" in response.content.decode()
    with workspace_scope(workspace.id):
        assert Membership.objects.count() == 1


def test_metering_never_grants_past_the_limit_and_counts_only_what_it_grants(workspace, on_plan):
    from sources import metering

    on_plan(max_crawl_pages_per_day=10)
    assert [quotas.take_up_to(workspace, "crawl_pages", n) for n in (4, 4, 4, 4)] == [4, 4, 2, 0]
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 10
    with pytest.raises(quotas.QuotaExceeded):
        quotas.take(workspace, "crawl_pages", 1)
    assert metering.used(workspace_id=workspace.id, metric="crawl_pages") == 10


def test_pushed_documents_count_against_the_documents_quota(api, agent, workspace, on_plan):
    on_plan(max_documents=2)
    url = f"/api/v1/agents/{agent.id}/documents:batch"
    docs = [{"external_id": f"d{i}", "title": f"Doc {i}", "text": "Some text."} for i in range(3)]
    refused = api.post(url, {"documents": docs}, format="json")
    assert_refused(refused, "documents", limit=2, usage=0)
    assert sources_of(workspace) == 0  # not even the agent's push source
    assert api.post(url, {"documents": docs[:2]}, format="json").status_code in (200, 207)
    again = api.post(url, {"documents": docs[:2]}, format="json")  # the same ids: nothing new, allowed
    assert again.status_code in (200, 207), again.content
