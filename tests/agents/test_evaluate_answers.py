"""manage.py evaluate_answers on a two-page site of our own: one JSON line, the new answerer beside the
old one, an annotation that does not match its page refused, a fact our extraction loses reported and asked;
and every named question set matches the pages of its shared site."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents.evaluation import answers, sets
from agents.evaluation.sets import SETS, QuestionSet

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


# Visible on every page, but a page footer is not main text: our extraction leaves it out.
FOOTER = "Our phone line is open 9 to 5 on weekdays."
LOST = {
    "id": "f1",
    "question": "When can I call the shop?",
    "page": "returns.html",
    "fact": "9 to 5 on weekdays",
}


@pytest.fixture
def site(tmp_path):
    for path, (title, text) in PAGES.items():
        page = tmp_path / "site" / path
        page.parent.mkdir(parents=True, exist_ok=True)
        paragraphs = "".join(f"<p>{part}</p>" for part in text.split("\n\n"))
        page.write_text(
            f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>{paragraphs}</main>"
            f"<footer><p>{FOOTER}</p></footer></body></html>"
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


def test_a_named_set_runs_and_a_fact_lost_by_extraction_is_reported_not_refused(site, tmp_path, monkeypatch):
    write_questions(tmp_path / "shop_qa.jsonl", [*QUESTIONS, LOST])
    monkeypatch.setattr(sets, "HERE", tmp_path)
    monkeypatch.setattr(sets, "SHARED_DATA", tmp_path / "data")
    (tmp_path / "data" / "sites").mkdir(parents=True)
    site.rename(tmp_path / "data" / "sites" / "shop")
    monkeypatch.setitem(SETS, "shop", QuestionSet("shop", "shop_qa.jsonl", "shop"))
    out, err = StringIO(), StringIO()
    call_command("evaluate_answers", "--set", "shop", "--answerer", "new", stdout=out, stderr=err)
    [result] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert result["set"] == "shop" and result["n"] == 3 and result["lost_in_extraction"] == ["f1"]
    assert "f1: fact not in the indexed text of its page" in err.getvalue()
    assert result["new"]["answer_accuracy"] == pytest.approx(2 / 3, abs=0.001)
    assert "old" not in result


def test_a_named_set_and_a_questions_file_together_are_refused(site, tmp_path):
    questions = write_questions(tmp_path / "qa.jsonl", QUESTIONS)
    with pytest.raises(CommandError, match="either --set or --questions"):
        call_command(
            "evaluate_answers", "--set", "flask", questions=questions, stdout=StringIO(), stderr=StringIO()
        )


@pytest.mark.parametrize("question_set", SETS.values(), ids=list(SETS))
def test_every_named_set_is_annotated_on_the_pages_of_its_site(question_set):
    questions = answers.load_questions(question_set.questions)
    assert len({q.id for q in questions}) == len(questions) >= 12
    assert answers.annotation_problems(question_set.site, questions, question_set.page_pattern) == []
