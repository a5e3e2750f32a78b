"""The built-in answerer weighs a question's terms by how specific they are in the agent's own workspace
(BM25 idf of its keyword index): through the admin's live preview, with text sources indexed and no
model, the sentence that answers is the one holding the rare term, not the one sharing common ones."""

import pytest

from retrieval.keyword import idf, tokenize, workspace_idf
from sources.tenancy import workspace_scope
from tests.agents.conftest import events
from tests.factories import index_text

pytestmark = pytest.mark.django_db

# A ferry company's knowledge: "ferry", "Lindholm" and "leave" are on every page, "Sundays" on few.
TIMETABLE = (
    "Lindholm ferry timetable\n\n"
    "The Lindholm ferry leaves Sandvik quay at 06:40 and 18:15 on weekdays. "
    "On Saturdays it leaves at 09:30 and comes back at 16:00. "
    "On Sundays there is a single crossing at 11:05. "
    "The crossing takes 25 minutes."
)
FARES = (
    "Ferry fares\n\n"
    "A return ticket for the Lindholm ferry costs 12 euros for adults and 6 euros for children. "
    "Cars cost 40 euros each way. Tickets are sold on board the ferry before it leaves."
)
VISITING = (
    "Visiting Lindholm\n\n"
    "Lindholm is a small island that the ferry reaches from Sandvik. "
    "Leave your car at the quay car park if you do not take it across on the ferry. "
    "Bicycles travel free on every ferry."
)


def preview(client, agent, message: str) -> dict:
    response = client.post(
        f"/app/agents/{agent.id}/preview/chat/stream", {"message": message}, content_type="application/json"
    )
    done = events(response)[-1]
    assert done["type"] == "done"
    return done


@pytest.fixture
def ferry_company(workspace, agent):
    for title, text in (("Timetable", TIMETABLE), ("Fares", FARES), ("Visiting Lindholm", VISITING)):
        index_text(workspace, agent, title, text)


def test_the_sunday_question_is_answered_with_the_sunday_sentence(client, owner, agent, ferry_company):
    client.force_login(owner)
    done = preview(client, agent, "When does the Lindholm ferry leave on Sundays?")
    assert "On Sundays there is a single crossing at 11:05." in done["answer"]
    assert "06:40" not in done["answer"]  # the weekday sentence shares "ferry" and "leave", not "Sundays"
    assert [source["title"] for source in done["sources"]] == ["Timetable"]


def test_a_question_of_amount_is_answered_with_the_number_and_its_unit(client, owner, agent, ferry_company):
    client.force_login(owner)
    done = preview(client, agent, "How long does the crossing to Lindholm take?")
    assert "The crossing takes 25 minutes." in done["answer"]


def test_term_specificity_is_counted_in_the_asking_workspace_only(
    workspace, other_workspace, agent, other_agent
):
    index_text(workspace, agent, "Timetable", TIMETABLE)
    index_text(workspace, agent, "Fares", FARES)
    # Another tenant whose every page mentions Sundays must not make the term common here.
    for number in range(3):
        index_text(
            other_workspace, other_agent, f"Opening {number}", f"Shop {number} opens on Sundays at noon."
        )
    sunday, ferry = tokenize("Sundays ferry")
    with workspace_scope(workspace.id):
        weights = workspace_idf([sunday, ferry])
    assert weights[sunday] == pytest.approx(idf(2, 1))
    assert weights[ferry] == pytest.approx(idf(2, 2))
    with workspace_scope(other_workspace.id):
        assert workspace_idf([sunday])[sunday] == pytest.approx(idf(3, 3))
