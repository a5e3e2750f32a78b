"""manage.py evaluate_answers on a two-page site of our own: one JSON line, the new answerer beside the
old one, and an annotation that does not match its page refused."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db

PAGES = {
    "returns.html": (
        "Returns",
        "Returns are accepted within 30\ndays of purchase, with the receipt. Refunds are paid to the card "
        "that was used, and take five business days to arrive. Items must be unused and in their box. "
        "Shipping costs are not refunded unless the item arrived damaged.",
    ),
    "guide/kettle.html": (
        "Kettle care",
        "Descale the kettle every month with white vinegar. Fill it halfway, boil, and leave it for an "
        "hour.\nRinse it twice afterwards. The kettle carries a two-year warranty against manufacturing "
        "defects, which does not cover limescale damage.",
    ),
}
QUESTIONS = [
    {
        "id": "r1",
        "question": "How long do I have to return an item?",
        "page": "returns.html",
        "fact": "30 days of purchase",
    },
    {
        "id": "k1",
        "question": "How often should I descale the kettle?",
        "page": "guide/kettle.html",
        "fact": "every month",
    },
]


@pytest.fixture
def site(tmp_path):
    for path, (title, text) in PAGES.items():
        page = tmp_path / "site" / path
        page.parent.mkdir(parents=True, exist_ok=True)
        paragraphs = "".join(f"<p>{part}</p>" for part in text.split("\n\n"))
        page.write_text(
            f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>{paragraphs}</main>"
            "</body></html>"
        )
    return tmp_path / "site"


def write_questions(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_it_prints_one_json_line_with_both_answerers_and_retrieval(site, tmp_path):
    questions = write_questions(tmp_path / "qa.jsonl", QUESTIONS)
    out = StringIO()
    call_command("evaluate_answers", site=site, questions=questions, stdout=out, stderr=StringIO())
    lines = out.getvalue().strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["n"] == 2 and result["retrieval_hit_rate"] == 1.0
    assert result["new"]["answer_accuracy"] == 1.0 and result["new"]["citation_accuracy"] == 1.0
    assert 0 <= result["old"]["answer_accuracy"] <= result["new"]["answer_accuracy"]
    assert set(result["old"]) == set(result["new"]) >= {"answer_accuracy", "citation_accuracy", "n"}


def test_an_annotation_whose_page_lacks_the_fact_is_refused(site, tmp_path):
    wrong = [{**QUESTIONS[0], "fact": "60 days of purchase"}]
    questions = write_questions(tmp_path / "qa.jsonl", wrong)
    with pytest.raises(CommandError, match="does not contain '60 days of purchase'"):
        call_command("evaluate_answers", site=site, questions=questions, stdout=StringIO(), stderr=StringIO())
