"""The text-layer sanity check: what reads as text passes, what only looks like text does not."""

from __future__ import annotations

import pytest

from ingestion.parsers.text_check import text_problem

READS = {
    "english prose": (
        "The fleet inspection found worn brake pads on four of the delivery vans. Replacement parts were "
        "ordered from the usual supplier and should arrive by the end of next week, weather permitting."
    ),
    "german prose": (
        "Die Inspektion der Flotte ergab abgenutzte Bremsbeläge an vier Lieferwagen. Die Ersatzteile "
        "wurden beim üblichen Lieferanten bestellt und sollen bis Ende nächster Woche eintreffen."
    ),
    "polish prose, a language outside the usual seven": (
        "Przegląd floty wykazał zużyte klocki hamulcowe w czterech samochodach dostawczych. Części "
        "zamienne zostały zamówione u stałego dostawcy i powinny dotrzeć do końca przyszłego tygodnia."
    ),
    "a ledger": "2023-01-05 Acme Fuel Supply Fuel 37.25\n2023-01-09 Harbor Tire Works Repairs 1,412.00",
    "a uml diagram": "NetworkLinearElement + GB_Curve CodeList::CL_Water «CodeList» DT_UUID WaterbodyNID:",
    "chinese": "关于浙江菲达环保科技股份有限公司 上海证券交易所 2016年 年度报告",
    "chinese with full-width punctuation inside tokens": (
        "由浙江菲达环保科技股份有限公司（以下简称菲达环保公司或公司）转来的《关于对2015年浙江菲达环保科技"  # noqa: RUF001
        "股份有限公司年度报告的事后审核问询函》（上证公函[2016]0512号，以下简称问询函）奉悉。"  # noqa: RUF001
    ),
    "arabic with vowel signs": "حَبيبي يا نور العين",
    "all-caps candidates": "NEEL KASHKARI REP 247 ALEX PADILLA DEM 64 JOHN PEREZ DEM 120",
}
GARBAGE = {
    "glyph numbers as code points": (
        "4XDUWHUO\\ PDLQWHQDQFH PHPR 7KH IOHHW LQVSHFWLRQ IRXQG ZRUQ EUDNH SDGV RQ IRXU RI WKH "
        "GHOLYHU\\ YDQV 5HSODFHPHQW SDUWV ZHUH RUGHUHG IURP WKH XVXDO VXSSOLHU DQG VKRXOG DUULYH"
    ),
    "symbols for letters": "$%& '(!) #$*+ ,-./ 0$1 2#3 $%&' ()*+ ,-./ 0123",
    "words read backwards": (
        "eht teelf noitcepsni dnuof nrow ekarb sdap no ruof fo eht yreviled snav dna eht strap erew "
        "deredro morf eht lausu reilppus"
    ),
}


@pytest.mark.parametrize("name", READS)
def test_text_that_reads_passes(name: str) -> None:
    assert text_problem(READS[name]) is None


@pytest.mark.parametrize("name", GARBAGE)
def test_text_that_only_looks_like_text_is_caught(name: str) -> None:
    assert text_problem(GARBAGE[name]) is not None


def test_backwards_words_are_named_as_such() -> None:
    assert text_problem(GARBAGE["words read backwards"]) == "its words read backwards"
