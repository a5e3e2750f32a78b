"""Notion blocks render to clean text with their structure (no database, no HTTP: a dict of children)."""

from integrations.notion.render import page_text, render_blocks
from tests.fakes.notion_server import FakeNotion
from tests.integrations.notion_pages import build_workspace


def _render(fake: FakeNotion, page_id: str) -> str:
    return page_text(fake.objects[page_id], lambda block_id: fake.children.get(block_id, []))


def test_every_block_type_renders_to_text_with_its_structure():
    fake = FakeNotion()
    ids = build_workspace(fake)
    text = _render(fake, ids["handbook"])
    assert text.startswith("Kettle handbook\n")
    for expected in [
        "# Returns",
        "Customers may return any kettle within 45 days of delivery.",
        "- Keep the receipt\n  A photo of it is enough.",
        "1. Open a claim\n2. Ship it back",
        "- [x] Descale monthly",
        "- [ ] Register the warranty",
        "Why 45 days?\n  Customers asked for more time in winter.",
        "> A kettle should outlive its owner's patience.",
        "💡 Refunds take five working days.",
        "```shell\ndescale --vinegar --minutes 30\n```",
        "Model | Wattage\nModel: Acme One; Wattage: 2200 W\nModel: Acme Mini; Wattage: 1500 W",
        "E = m \\cdot c^2",
        "The Acme One in red",  # an image's caption, not the image
        "Support answers within one day.",  # a synced block's content
        "See the care guide (https://acme.test/care).",
        "Page: Shipping",
    ]:
        assert expected in text, (expected, text)
    assert "img.test" not in text and "manual.pdf" not in text
    assert "\n\n\n" not in text


def test_a_synced_copy_renders_the_original_blocks():
    fake = FakeNotion()
    original = {
        "id": "orig",
        "type": "synced_block",
        "has_children": True,
        "synced_block": {"synced_from": None},
    }
    copy = {
        "id": "copy",
        "type": "synced_block",
        "has_children": True,
        "synced_block": {"synced_from": {"type": "block_id", "block_id": "orig"}},
    }
    fake.children = {
        "page": [original, copy],
        "orig": [
            {"id": "p", "type": "paragraph", "paragraph": {"rich_text": [{"plain_text": "Shared line"}]}}
        ],
    }
    lines = render_blocks("page", lambda b: fake.children.get(b, []))
    assert lines == ["Shared line", "Shared line"]


def test_a_database_row_lists_its_properties_before_its_body():
    fake = FakeNotion()
    ids = build_workspace(fake)
    text = _render(fake, ids["Do you ship to Chile?"])
    assert text == (
        "Do you ship to Chile?\nStatus: Draft\nTags: shipping, latam\n\nNot yet; Chile is planned for spring."
    )
