"""Records packed into one passage (a source's record_separator, e.g. an FAQ dump cut at "---") are joined
invisibly: the built-in answerer and its citations never show the separator to a visitor (issue #56)."""

import json

import pytest

from ingestion.indexing import source_index
from ingestion.kinds.text import TextKind
from ingestion.lifecycle import source_create
from sources.models import Chunk
from sources.tenancy import workspace_scope
from tests.agents.conftest import chat

pytestmark = pytest.mark.django_db

FAQ = "\n---\n".join(
    f"Q: What is the opening time of depot number {n}?\nA: Depot number {n} opens at {n + 5} am on weekdays."
    for n in range(1, 6)
)


@pytest.mark.parametrize("separator", ["---", "\n---\n", "###"])
def test_an_faq_answer_never_shows_the_record_separator(client, workspace, agent, separator):
    faq = FAQ.replace("\n---\n", separator)
    with workspace_scope(workspace.id):
        source = source_create(
            workspace=workspace,
            agent_id=agent.id,
            kind=TextKind.name,
            title="Depots FAQ",
            payload={"content": faq, "record_separator": separator},
        )
        source_index(source=source)
        texts = list(Chunk.objects.filter(source=source).values_list("text", flat=True))
    assert len(texts) == 1 and texts[0].count("Q: ") == 5  # the records were packed together
    response = chat(client, agent, "What is the opening time of depot number 2?")
    assert response.status_code == 200
    body = response.json()
    assert "Depot number 2 opens at 7 am on weekdays." in body["answer"]
    assert body["sources"] and body["sources"][0]["title"] == "Depots FAQ"
    shown = json.dumps(body)
    assert separator.strip() not in shown
