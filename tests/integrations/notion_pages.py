"""A small Notion workspace for tests: a handbook page with every block type, a child page, and a database."""

from __future__ import annotations

from tests.fakes.notion_server import FakeNotion, block, link_mention, rt


def handbook_blocks() -> list[dict]:
    return [
        block("heading_1", "Returns"),
        block("paragraph", "Customers may return any kettle within 45 days of delivery."),
        block(
            "bulleted_list_item",
            "Keep the receipt",
            children=[block("paragraph", "A photo of it is enough.")],
        ),
        block("bulleted_list_item", "Pack the base with the kettle"),
        block("numbered_list_item", "Open a claim"),
        block("numbered_list_item", "Ship it back"),
        block("to_do", "Descale monthly", checked=True),
        block("to_do", "Register the warranty", checked=False),
        block(
            "toggle",
            "Why 45 days?",
            children=[block("paragraph", "Customers asked for more time in winter.")],
        ),
        block("quote", "A kettle should outlive its owner's patience."),
        block("callout", "Refunds take five working days.", icon={"type": "emoji", "emoji": "💡"}),
        block("code", "descale --vinegar --minutes 30", language="shell", caption=[]),
        block(
            "table",
            table_width=2,
            has_column_header=True,
            has_row_header=False,
            children=[
                block("table_row", cells=[[rt("Model")], [rt("Wattage")]]),
                block("table_row", cells=[[rt("Acme One")], [rt("2200 W")]]),
                block("table_row", cells=[[rt("Acme Mini")], [rt("1500 W")]]),
            ],
        ),
        block("equation", expression="E = m \\cdot c^2"),
        block(
            "image",
            type="external",
            external={"url": "https://img.test/k.png"},
            caption=[rt("The Acme One in red")],
        ),
        block("file", type="file", file={"url": "https://files.test/manual.pdf"}, caption=[]),
        block(
            "synced_block", synced_from=None, children=[block("paragraph", "Support answers within one day.")]
        ),
        {
            **block("paragraph", ""),
            "paragraph": {
                "rich_text": [rt("See the "), link_mention("https://acme.test/care", "care guide"), rt(".")]
            },
        },
        block("divider"),
    ]


def build_workspace(notion: FakeNotion) -> dict[str, str]:
    ids: dict[str, str] = {}
    ids["handbook"] = notion.add_page("Kettle handbook", handbook_blocks())
    ids["child"] = notion.add_page(
        "Shipping",
        [block("paragraph", "We ship to Canada, Mexico and the United States in three days.")],
        parent=ids["handbook"],
    )
    ids["other"] = notion.add_page("Office plants", [block("paragraph", "Water the ficus on Fridays.")])
    schema = {
        "Name": {"id": "title", "type": "title", "title": {}},
        "Status": {"id": "s", "type": "status", "status": {}},
        "Tags": {"id": "t", "type": "multi_select", "multi_select": {}},
    }
    ids["faq"] = notion.add_database("Support FAQ", schema)
    for title, status, tags, answer in [
        ("Can I descale with lemon?", "Published", ["care"], "Yes, lemon juice works as well as vinegar."),
        ("Do you ship to Chile?", "Draft", ["shipping", "latam"], "Not yet; Chile is planned for spring."),
        ("Is the lid dishwasher safe?", "Published", [], "Only the filter is dishwasher safe."),
    ]:
        ids[title] = notion.add_page(
            title,
            [block("paragraph", answer)],
            parent=ids["faq"],
            parent_type="database_id",
            properties={
                "Status": {"id": "s", "type": "status", "status": {"name": status}},
                "Tags": {"id": "t", "type": "multi_select", "multi_select": [{"name": t} for t in tags]},
            },
            shared=False,
        )
    return ids
