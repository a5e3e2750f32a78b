"""The workspace admin's web UI in headless Chromium, against the real server and a real Celery worker."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from agents.models import Conversation, Message
from ingestion.files import delete_files
from sources.models import Membership, Source
from sources.tenancy import workspace_scope
from tests.factories import SHARED_DATA, index_text
from tests.sources.web.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCUMENTS = SHARED_DATA / "documents"
PROCESSING = 90_000  # ms: a crawl or an upload parse on a busy two-core machine


def row(page: Page, title: str):
    return page.locator(f'#source-rows tr:has([data-field=title]:text-is("{title}"))')


def open_add_dialog(page: Page, kind: str):
    page.click(".page-head [data-open-dialog=add-dialog]")
    dialog = page.locator("#add-dialog")
    expect(dialog).to_be_visible()
    dialog.locator(f"[data-kind-tab={kind}]").click()
    return dialog


def add_web_source(page: Page, kind: str, url: str, title: str = "") -> None:
    dialog = open_add_dialog(page, kind)
    dialog.locator("input[name=url]").fill(url)
    dialog.locator("input[name=title]").fill(title)
    dialog.locator("[data-submit]").click()
    expect(dialog).to_be_hidden()


def csrf_post(page: Page, path: str):
    token = page.locator('meta[name="csrf-token"]').get_attribute("content")
    return page.request.post(path, headers={"X-CSRFToken": token, "Accept": "application/json"})


@pytest.mark.worker
def test_an_owner_adds_every_kind_of_source_and_watches_it_finish(
    celery_worker, sign_in, live_server, owner, agent, site, settings, tmp_path
):
    settings.UPLOAD_MAX_FILE_BYTES = 1_000_000  # so "a file over the limit" needs only a small file
    page = sign_in(owner)
    expect(page.locator("[data-agent-card]")).to_have_count(1)
    page.click(f"[data-agent-card='{agent.id}']")
    expect(page.locator("[data-sources-empty]")).to_be_visible()
    screenshot(page, "sources-empty")
    page.evaluate("window.__sameDocument = true")  # gone if anything below reloads the page

    # Validation messages appear next to the field they are about.
    dialog = open_add_dialog(page, "url")
    dialog.locator("input[name=url]").fill("ftp://example.com/manual.pdf")
    dialog.locator("[data-submit]").click()
    expect(dialog.locator("[data-error-for=url]")).to_contain_text("http:// or https://")
    dialog.locator("input[name=url]").fill("http://10.1.2.3/admin")
    dialog.locator("[data-submit]").click()
    expect(dialog.locator("[data-error-for=url]")).to_contain_text("private network")
    dialog.locator("[data-kind-tab=text]").click()
    dialog.locator("input[name=title]").fill("Returns policy")
    dialog.locator("[data-submit]").click()
    expect(dialog.locator("[data-error-for=content]")).to_have_text("This is empty: paste the text to add.")
    expect(dialog.locator("[data-field-wrap=content]")).to_have_class(re.compile("has-error"))
    screenshot(page, "add-source-errors", full_page=False)

    # Pasted text, done without a reload.
    dialog.locator("textarea[name=content]").fill(
        "Items can be returned within 30 days of delivery for a full refund. "
        "Start a return from your order page; we email a prepaid label."
    )
    dialog.locator("[data-submit]").click()
    expect(dialog).to_be_hidden()
    expect(row(page, "Returns policy")).to_have_attribute("data-status", "done", timeout=PROCESSING)
    expect(row(page, "Returns policy").locator("[data-field=chunks]")).to_have_text("1")

    # Files: one over the limit is refused next to the field, by the page and by the server.
    big = tmp_path / "catalogue.txt"
    big.write_text("kettle " * 200_000)
    dialog = open_add_dialog(page, "upload")
    dialog.locator("input[type=file]").set_input_files(str(big))
    dialog.locator("[data-submit]").click()
    expect(dialog.locator("[data-error-for=file]")).to_have_text(
        "catalogue.txt is 1.3 MB; the limit per file is 977 KB."
    )
    page.evaluate("document.querySelector('[data-add-form]').dataset.maxBytes = '999999999'")
    with page.expect_response(lambda r: r.url.endswith("/sources/add")) as refused:
        dialog.locator("[data-submit]").click()
    assert refused.value.status == 413
    expect(dialog.locator("[data-error-for=file]")).to_have_text(
        "catalogue.txt is 1.3 MB; the limit per file is 977 KB."
    )
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.filter(kind="upload").exists()

    # Two files at once, with the upload's progress.
    dialog.locator("input[type=file]").set_input_files(
        [str(DOCUMENTS / "docx" / "zen-of-python.docx"), str(DOCUMENTS / "csv" / "utf8-bom.csv")]
    )
    expect(dialog.locator("[data-file-list] li")).to_have_count(2)
    expect(dialog.locator("[data-submit]")).to_have_text("Upload 2 files")
    screenshot(page, "add-files", full_page=False)
    dialog.locator("[data-submit]").click()
    expect(dialog).to_be_hidden()
    assert dialog.locator("[role=progressbar]").get_attribute("aria-valuenow") == "100"
    for name in ("zen-of-python.docx", "utf8-bom.csv"):
        expect(row(page, name)).to_have_attribute("data-status", "done", timeout=PROCESSING)

    # A file whose stored text is lost says so, and takes the file again.
    zen = row(page, "zen-of-python.docx")
    with workspace_scope(agent.workspace_id):
        delete_files(agent.workspace_id, Source.objects.get(title="zen-of-python.docx").id)
    zen.get_by_role("button", name="Reindex").click()
    expect(zen).to_have_attribute("data-status", "failed", timeout=PROCESSING)
    expect(zen.locator("[data-field=error]")).to_contain_text("re-upload needed")
    expect(zen.get_by_text("Re-upload needed", exact=True)).to_be_visible()
    with page.expect_file_chooser() as chooser:
        zen.get_by_role("button", name="Upload file again").click()
    chooser.value.set_files(str(DOCUMENTS / "docx" / "zen-of-python.docx"))
    expect(zen).to_have_attribute("data-status", "done", timeout=PROCESSING)
    expect(zen.get_by_text("Re-upload needed", exact=True)).to_have_count(0)

    # A site through its sitemap, and a page that is not there.
    add_web_source(page, "sitemap", site.url("/sitemap.xml"), "Help center")
    add_web_source(page, "url", site.url("/gone"))
    help_center = row(page, "Help center")
    expect(help_center).to_have_attribute("data-status", "done", timeout=PROCESSING)
    expect(help_center.locator("[data-field=pages]")).to_have_text("2 pages indexed")
    gone = row(page, site.url("/gone"))
    expect(gone).to_have_attribute("data-status", "failed", timeout=PROCESSING)
    expect(gone.locator("[data-field=error]")).to_be_visible()
    detail = gone.locator("[data-field=error-detail]")
    expect(detail).to_be_hidden()
    gone.get_by_text("Show details").click()
    expect(detail).to_be_visible()
    expect(detail).to_contain_text("404")
    assert page.evaluate("window.__sameDocument") is True
    screenshot(page, "sources")

    # Preview: the extracted documents and a sample of chunks.
    help_center.get_by_role("link", name="Preview").click()
    preview = page.locator("#preview-dialog")
    expect(preview.locator("[data-document]")).to_have_count(2)
    expect(preview.locator("[data-preview-content]")).to_contain_text("two-year warranty")
    expect(preview.locator("[data-chunk]").first).to_be_visible()
    screenshot(page, "preview", full_page=False)
    preview.locator(".modal-foot [data-close-dialog]").click()

    # Discover: pick pages of a domain and add them as web pages.
    page.click(".page-head [data-open-dialog=discover-dialog]")
    discover = page.locator("#discover-dialog")
    discover.locator("input[name=domain]").fill(site.url("/"))
    discover.locator("[data-submit]").click()
    found = discover.locator("[data-page-list] input[type=checkbox]")
    expect(found).to_have_count(3)  # the home page and the sitemap's two
    expect(discover.locator("[data-page-list]")).to_contain_text("Acme Kettles help")
    screenshot(page, "discover", full_page=False)
    discover.locator("[data-check-all]").uncheck()
    discover.locator(f'[data-page-list] input[value="{site.url("/")}"]').check()
    discover.get_by_role("button", name="Add 1 page").click()
    expect(discover).to_be_hidden()
    expect(row(page, "Acme Kettles help")).to_have_attribute("data-status", "done", timeout=PROCESSING)

    # Reindex and recrawl, then delete with a confirmation that names what goes.
    row(page, "Returns policy").get_by_role("button", name="Reindex").click()
    expect(page.locator(".flash-msg").last).to_contain_text("reindex started")
    expect(row(page, "Returns policy")).to_have_attribute("data-status", "done", timeout=PROCESSING)
    help_center.get_by_role("button", name="Recrawl").click()
    expect(page.locator(".flash-msg").last).to_contain_text("recrawl started")
    expect(help_center).to_have_attribute("data-status", "done", timeout=PROCESSING)
    expect(help_center.locator("[data-field=pages]")).to_have_text("2 pages indexed")

    help_center.get_by_role("link", name="Delete").click()
    confirm = page.locator("#delete-dialog")
    expect(confirm.locator("[data-delete-summary]")).to_have_text(
        "This removes Help center with its 2 pages and 2 chunks."
    )
    confirm.get_by_role("button", name="Delete").click()
    expect(help_center).to_have_count(0)
    with workspace_scope(agent.workspace_id):
        assert not Source.objects.filter(title="Help center").exists()
    assert page.evaluate("window.__sameDocument") is True

    # Test retrieval, as the agent would search.
    page.get_by_role("link", name="Test retrieval").click()
    page.fill("input[name=q]", "How do I return an item for a refund?")
    page.get_by_role("button", name="Test").click()
    hits = page.locator("[data-hit]")
    expect(hits.first).to_contain_text("Returns policy")
    for score in ("score", "vector", "keyword"):
        expect(hits.first.locator(f"[data-score={score}] b")).to_have_text(re.compile(r"^0\.\d{3}|1\.000$"))
    expect(page.locator("[data-verdict]")).to_have_attribute("data-verdict", "no-gate")
    screenshot(page, "test-retrieval")

    page.get_by_role("link", name="Overview").click()
    expect(page.locator(f"[data-agent-card='{agent.id}']")).to_contain_text("5 sources")
    screenshot(page, "home")


def test_settings_the_scope_gate_and_the_live_preview(sign_in, owner, workspace, agent):
    index_text(
        workspace,
        agent,
        "Shipping",
        "We ship to Canada, Mexico and the United States. Express delivery takes two days.",
    )
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/settings")
    snippet = page.locator("[data-snippet]")
    expect(snippet).to_contain_text(f'/static/agents/widget.js" data-agent="{agent.public_key}" defer')
    page.get_by_role("button", name="Copy").click()
    expect(page.locator("[data-copy]")).not_to_have_text("Copy")

    # A template without {context} is refused next to the field; nothing is saved.
    page.fill("textarea[name=context_template]", "Answer from what you know.")
    page.fill("textarea[name=allowed_origins]", "https://acme.example\nftp://files.acme.example")
    page.click("[data-save]")
    expect(page.locator(".field.has-error")).to_have_count(2)
    expect(page.locator(".field.has-error").first).to_contain_text("must contain {context}")
    expect(page.locator(".field.has-error").last).to_contain_text("is not an origin")

    # A valid one is saved; one without the guard against instructions in passages gets a warning.
    page.fill("textarea[name=context_template]", "Passages:\n{context}")
    page.fill("textarea[name=allowed_origins]", "https://acme.example/\n\nhttps://Shop.Acme.example")
    page.fill("input[name=min_score]", "0.3")
    page.fill("textarea[name=offtopic_reply]", "I can only help with orders and shipping.")
    page.fill("input[name=top_k]", "3")
    page.click("[data-save]")
    expect(page.locator(".flash-msg.success")).to_have_text("Settings saved.")
    expect(page.locator("[data-template-warning]")).to_contain_text("does not tell the model to ignore")
    expect(page.locator("textarea[name=allowed_origins]")).to_have_value(
        "https://acme.example\nhttps://shop.acme.example"
    )
    agent.refresh_from_db()
    assert (agent.min_score, agent.top_k, agent.allowed_origins) == (
        0.3,
        3,
        ["https://acme.example", "https://shop.acme.example"],
    )

    # The live preview streams the answer and shows what was retrieved for it.
    chat = page.locator("[data-preview-chat]")
    chat.locator("input[name=message]").fill("How long does express delivery take?")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".bubble.bot[data-done]")).to_contain_text("two days", timeout=20000)
    expect(chat.locator(".hits-mini")).to_contain_text("Shipping")
    page.set_viewport_size({"width": 1440, "height": 1100})
    screenshot(page, "settings", full_page=False)  # the sticky save bar sits at the screen's bottom

    # A follow-up continues the same conversation; "New conversation" starts another.
    follow_up = "And is express delivery available abroad?"
    chat.locator("input[name=message]").fill(follow_up)
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".bubble.bot[data-done]")).to_have_count(2, timeout=20000)
    with workspace_scope(workspace.id):
        conversations = list(Conversation.objects.filter(agent=agent))
        assert len(conversations) == 1
        users = conversations[0].messages.filter(role=Message.Role.USER).values_list("content", flat=True)
        assert list(users) == ["How long does express delivery take?", follow_up]
    chat.get_by_role("button", name="New conversation").click()
    expect(chat.locator(".bubble")).to_have_count(0)
    chat.locator("input[name=message]").fill("How long does express delivery take?")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator(".bubble.bot[data-done]")).to_have_count(1, timeout=20000)
    with workspace_scope(workspace.id):
        assert Conversation.objects.filter(agent=agent).count() == 2

    # The scope gate, as Test retrieval shows it.
    page.get_by_role("link", name="Test retrieval").click()
    page.fill("input[name=q]", "How long does express delivery take?")
    page.get_by_role("button", name="Test").click()
    expect(page.locator("[data-verdict]")).to_have_attribute("data-verdict", "pass")
    page.fill("input[name=q]", "Who painted the Mona Lisa?")
    page.get_by_role("button", name="Test").click()
    expect(page.locator("[data-verdict]")).to_have_attribute("data-verdict", "refuse")
    expect(page.locator("[data-verdict]")).to_contain_text("I can only help with orders and shipping.")
    expect(page.locator("[data-hit]")).to_have_count(0)


def test_a_member_sees_no_buttons_that_change_things_and_is_refused(
    sign_in, live_server, member, workspace, agent
):
    source = index_text(workspace, agent, "Returns", "Items can be returned within 30 days.")
    page = sign_in(member)
    page.click(f"[data-agent-card='{agent.id}']")
    expect(row(page, "Returns")).to_have_attribute("data-status", "done")
    expect(row(page, "Returns").get_by_role("link", name="Preview")).to_be_visible()
    for name in ("Reindex", "Recrawl", "Delete"):
        expect(page.get_by_role("button", name=name)).to_have_count(0)
    expect(page.get_by_role("link", name="Delete")).to_have_count(0)
    expect(page.locator("[data-open-dialog]")).to_have_count(0)
    expect(page.locator(".sidebar [data-role]")).to_have_text("Member")
    screenshot(page, "member-sources")

    page.get_by_role("link", name="Settings").click()
    expect(page.locator("input[name=name]")).to_be_disabled()
    expect(page.locator("[data-save]")).to_have_count(0)
    expect(page.locator("[data-preview-chat]")).to_have_count(0)

    # The buttons are hidden, and the requests behind them are refused by the server too.
    for path in (
        f"/app/sources/{source.id}/reindex",
        f"/app/sources/{source.id}/delete",
        f"/app/agents/{agent.id}/discover",
        f"/app/agents/{agent.id}/preview/chat/stream",
    ):
        response = csrf_post(page, live_server.url + path)
        assert response.status == 403, path
    with workspace_scope(workspace.id):
        assert Source.objects.filter(id=source.id, status="done").exists()


def test_a_user_of_another_workspace_gets_404(sign_in, live_server, outsider, workspace, agent):
    source = index_text(workspace, agent, "Returns", "Items can be returned within 30 days.")
    page = sign_in(outsider)
    expect(page.locator("[data-agent-card]")).to_have_count(0)
    for path in (f"/app/agents/{agent.id}/sources", f"/app/sources/{source.id}/preview"):
        response = page.goto(live_server.url + path)
        assert response.status == 404
        expect(page.locator("h1")).to_have_text("Nothing here")
    assert csrf_post(page, f"{live_server.url}/app/sources/{source.id}/delete").status == 404


def test_someone_in_two_workspaces_switches_between_them(sign_in, owner, agent, other_workspace, other_agent):
    with workspace_scope(other_workspace.id):
        Membership.objects.create(user=owner, role="member")
    page = sign_in(owner)
    expect(page.locator("[data-agent-card]")).to_have_text(re.compile("Support bot"))
    page.select_option("#workspace-switch", label="Globex")
    expect(page.locator("[data-agent-card]")).to_have_text(re.compile("Globex bot"))
    expect(page.locator(".sidebar [data-role]")).to_have_text("Member")


def test_an_owner_manages_members_and_api_keys(sign_in, owner, workspace, agent):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("nina", "nina@example.com", "pw-for-tests-123")
    page = sign_in(owner)
    page.get_by_role("link", name="Members and keys").click()
    page.fill("input[name=identifier]", "nina@example.com")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator(".flash-msg")).to_contain_text("Added nina as member")
    expect(page.locator("[data-member=nina]")).to_be_visible()

    page.fill("input[name=name]", "CMS sync")
    page.get_by_role("button", name="Create key").click()
    expect(page.locator("[data-new-key] [data-key]")).to_have_text(re.compile(r"^gk_\w+_"))
    screenshot(page, "workspace")
    page.locator("[data-key-row]").get_by_role("button", name="Revoke").click()
    expect(page.locator("[data-key-row][data-revoked]")).to_have_count(1)
    expect(page.locator("[data-new-key]")).to_have_count(0)
