"""The faster abbreviation pass rewrites each line as pysbd's own does, so the sentences are the same."""

import random

import pytest
from pysbd.lang.english import English

from ingestion.text.pysbd_abbreviations import FastEnglish
from ingestion.text.segment import sentences
from tests.factories import pysbds_own_abbreviation_pass

# Abbreviations of each kind pysbd treats apart (prepositive, before numbers, the rest, with dots inside),
# in the cases a text writes them, and what may follow their dot.
WORDS = [
    "Dr",
    "dr",
    "DR",
    "Mr",
    "St",
    "fig",
    "Fig",
    "v",
    "No",
    "no",
    "NO",
    "p",
    "pp",
    "Art",
    "is",
    "Is",
    "me",
    "al",
    "co",
    "Co",
    "e.g",
    "E.g",
    "i.e",
    "Ph.D",
    "u.s",
    "U.S",
    "a.m",
    "Jan",
    "this",
    "island",
]
FOLLOWERS = [" the", " The", " 5", " (see", ":12", ".", ",", " -", "?", " I ", " I'm", "", "\n", " é", " ü"]
FILLERS = ["", " ", "  ", "\t", "(", "x", "é"]


def pysbds(line: str) -> str:
    return English.AbbreviationReplacer(line, English).search_for_abbreviations_in_string(line)


def ours(line: str) -> str:
    return FastEnglish.AbbreviationReplacer(line, FastEnglish).search_for_abbreviations_in_string(line)


@pytest.mark.parametrize(
    "line",
    [
        "Dr. Smith met Mr. Jones at St. Mary's, no. 5, p. 12 and pp. 3-4; Fig. 3 is v. clear.",
        "It is. is. Is. IS. it is. this is. island is. me. Me. al. et al. Co. co. ",
        "Use e.g. a descaler, i.e. white vinegar; the U.S. and u.s. Ph.D. and ph.d. students.",
        "No. I said no. No. 5 and no. (six) and No.:12 then nos. 4.",
        "Mr. é and Dr. ü, the café is. closed, Fig. 2 is. shown.",  # not ASCII
        "Dr Smith is here without a dot",
        # pysbd reads the letter after "{abbr} " (its braces are literal) and skips before a capital.
        "x is.. {is} The end; Dr.. {dr} The end",
        "A line\twith\ttabs is.\tno. 4\x0bp. 5",
        "",
    ],
)
def test_a_line_is_rewritten_as_pysbd_rewrites_it(line):
    assert ours(line) == pysbds(line)


def test_random_lines_of_abbreviations_are_rewritten_as_pysbd_rewrites_them():
    rng = random.Random(16)
    lines = [
        "".join(
            rng.choice(FILLERS) + rng.choice(WORDS) + rng.choice([".", ".", ""]) + rng.choice(FOLLOWERS)
            for _ in range(rng.randint(1, 8))
        )
        for _ in range(3000)
    ]
    different = [line for line in lines if ours(line) != pysbds(line)]
    assert different == []
    # The lines do exercise rewrites: pysbd changes most of them.
    assert sum(pysbds(line) != line for line in lines) > 1500


def test_the_flask_docs_and_scifact_abstracts_get_pysbds_sentences():
    from tests.bench.site_inputs import flask_paragraphs
    from tests.bench.test_search_latency import SCIFACT, read_jsonl

    paragraphs = flask_paragraphs() + [row["text"] for row in read_jsonl(SCIFACT / "corpus.jsonl", 300)]
    ours_sentences = [sentences(text) for text in paragraphs]
    with pysbds_own_abbreviation_pass():
        assert ours_sentences == [sentences(text) for text in paragraphs]
