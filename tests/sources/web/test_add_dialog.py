"""The "Add source" dialog's rules: titles from pasted text, errors under the field they belong to."""

from __future__ import annotations

import pytest

from sources.models import Source
from sources.tenancy import workspace_scope

pytestmark = pytest.mark.django_db


def add(client, agent, data):
    return client.post(f"/app/agents/{agent.id}/sources/add", data, HTTP_ACCEPT="application/json")


def test_text_without_a_title_is_titled_from_its_first_line(client, owner, agent):
    client.force_login(owner)
    pasted = "\n\n# Opening hours\nNine to five."
    response = add(client, agent, {"kind": "text", "title": "", "content": pasted})
    assert response.status_code == 201, response.content
    long_line = "Our returns policy covers every kettle bought in the last thirty days, " * 3
    assert add(client, agent, {"kind": "text", "content": long_line}).status_code == 201
    with workspace_scope(agent.workspace_id):
        titles = set(Source.objects.values_list("title", flat=True))
    assert "Opening hours" in titles
    (cut,) = titles - {"Opening hours"}
    assert cut.endswith("\u2026") and len(cut) <= 81 and long_line.startswith(cut[:-1])


def test_an_empty_address_is_not_reported_under_the_optional_title(client, owner, agent):
    client.force_login(owner)
    response = add(client, agent, {"kind": "url", "url": "", "title": ""})
    assert response.status_code == 400
    assert set(response.json()) == {"url"}  # field -> messages; nothing under the title


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_dialog_forgets_old_errors_checks_files_on_pick_and_keeps_its_label(
    sign_in, owner, agent, settings, tmp_path
):
    from playwright.sync_api import expect

    settings.UPLOAD_MAX_FILE_BYTES = 1_000_000
    page = sign_in(owner)
    page.goto(page.url + f"agents/{agent.id}/sources")
    page.click(".page-head [data-open-dialog=add-dialog]")
    dialog = page.locator("#add-dialog")
    dialog.locator("[data-kind-tab=url]").click()
    dialog.locator("[data-submit]").click()  # an empty address
    expect(dialog.locator("[data-error-for=url]")).not_to_be_empty()
    expect(dialog.locator("[data-error-for=title]")).to_be_empty()
    dialog.get_by_role("link", name="Cancel").click()
    page.click(".page-head [data-open-dialog=add-dialog]")
    expect(dialog.locator("[data-error-for=url]")).to_be_empty()  # not left over from before

    big = tmp_path / "catalogue.txt"
    big.write_text("kettle " * 200_000)
    small = tmp_path / "faq.txt"
    small.write_text("Kettles boil water.")
    dialog.locator("[data-kind-tab=upload]").click()
    expect(dialog.locator("label.choose-files")).to_be_visible()
    assert dialog.locator("input[type=file]").bounding_box()["width"] <= 1  # the native button is hidden
    dialog.locator("details[data-labels] summary").focus()
    page.keyboard.press("Tab")  # ... but the keyboard still reaches it, and the drop zone shows the focus
    assert page.evaluate("document.activeElement.id") == "add-files"
    assert dialog.locator("[data-dropzone]").evaluate("z => z.matches(':focus-within')")
    dialog.locator("input[type=file]").set_input_files([str(small), str(big)])
    # Said when picked, before any upload.
    expect(dialog.locator("[data-error-for=file]")).to_have_text(
        "catalogue.txt is 1.3 MB; the limit per file is 977 KB."
    )
    expect(dialog.locator("[data-submit]")).to_have_text("Upload 2 files")
    dialog.get_by_role("button", name="Remove faq.txt").click()
    expect(dialog.locator("[data-file-list] li")).to_have_count(1)
    expect(dialog.locator("[data-submit]")).to_have_text("Upload")
    # The server refuses what the page let through; the button still says what it does on this tab.
    page.evaluate("document.querySelector('[data-add-form]').dataset.maxBytes = '999999999'")
    with page.expect_response(lambda r: r.url.endswith("/sources/add")) as refused:
        dialog.locator("[data-submit]").click()
    assert refused.value.status == 413
    expect(dialog.locator("[data-submit]")).to_have_text("Upload")
    dialog.get_by_role("button", name="Remove catalogue.txt").click()
    expect(dialog.locator("[data-error-for=file]")).to_be_empty()
