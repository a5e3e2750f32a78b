"""Work a view leaves for after its response (config/after_response.py): run when the response is closed,
which Django's test client does before returning; a failure is logged, never the response's."""

from __future__ import annotations

import pytest
from django.http import HttpResponse

from config.after_response import after_response

# Closing a response sends request_finished, whose receivers tidy the database connections.
pytestmark = pytest.mark.django_db


def test_work_runs_when_the_response_is_closed_and_not_before():
    done = []
    response = HttpResponse(b"ok")
    after_response(response, lambda: done.append("stored"))
    assert done == []
    response.close()  # what a server does once the response is sent
    assert done == ["stored"]


def test_a_failure_after_the_response_is_logged(caplog):
    response = HttpResponse(b"ok")

    def fail() -> None:
        raise RuntimeError("the cache is down")

    after_response(response, fail)
    response.close()
    assert "work after the response failed" in caplog.text and "the cache is down" in caplog.text


def test_the_search_api_stores_a_new_answer_after_its_response(api, outsider_api, workspace, agent):
    """Through the test client (which closes the response before returning), the next ask is a hit; an
    outsider asking the same is never answered from it."""
    from tests.factories import index_text

    index_text(workspace, agent, "Kettle", "Every kettle carries a two-year warranty.")
    first = api.get("/api/v1/search", {"q": "kettle warranty"})
    again = api.get("/api/v1/search", {"q": "kettle warranty"})
    assert first["X-Search-Cache"] == "miss" and again["X-Search-Cache"] == "hit"
    assert again.json() == first.json() and first.json()["results"]
    theirs = outsider_api.get("/api/v1/search", {"q": "kettle warranty"})
    assert theirs["X-Search-Cache"] == "miss" and theirs.json()["results"] == []
    source = first.json()["results"][0]["source"]["id"]
    assert outsider_api.get(f"/api/v1/sources/{source}").status_code == 404
