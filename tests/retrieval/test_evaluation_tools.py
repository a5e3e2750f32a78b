"""The measuring tools: the seeded SciFact subset and the non-English check's pages and questions."""

from retrieval.evaluation import sample_documents
from retrieval.keyword import term_counts
from retrieval.management.commands.check_multilingual import QUESTIONS, bm25_ranking, load_pages
from tests.factories import SHARED_DATA


def test_a_subset_holds_every_judged_document_and_the_same_others_each_time():
    corpus = [str(i) for i in range(100)]
    qrels = {"q1": {"3": 1, "7": 1}, "q2": {"50": 2}}
    first = sample_documents(corpus, qrels, 10)
    assert {"3", "7", "50"} <= first and len(first) == 13
    assert sample_documents(corpus, qrels, 10) == first
    assert sample_documents(corpus, qrels, 1000) == set(corpus)


def test_every_question_of_the_multilingual_check_names_exactly_one_page():
    pages = load_pages(SHARED_DATA / "feeds")
    assert len(pages) == 65
    for _question, answer in QUESTIONS:
        assert sum(title.startswith(answer) for title, _ in pages) == 1, answer
    # Keyword search over the pages works in their scripts (Cyrillic is kept whole, not stemmed away).
    terms = [term_counts(f"{title} {text}") for title, text in pages]
    best = bm25_ranking(terms, term_counts("Kaspersky антивирус"))[0]
    assert "Kaspersky Mobile Security" in pages[int(best.chunk_id)][0]
