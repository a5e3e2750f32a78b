"""Every real file in shared/data/documents: text checked by eye in the file, or the specific failure.

The expected strings were read off the documents themselves (rendered pages, the sheets in a spreadsheet
program), not off the parser's output. Format-specific behaviour (column order, headers, merged cells)
is pinned in the test module of each family; this one makes sure no file goes untested.
"""

from __future__ import annotations

import pytest

from tests.ingestion.parsers.documents import DOCUMENTS, failure, text

READS = {
    # PDF
    "pdf/arabic-habibi.pdf": ["حَبيبي", "habibi"],
    "pdf/cn-annual-report-scan-ocr.pdf": ["关于浙江菲达环保科技股份有限公司", "上海证券交易所"],
    "pdf/federal-register-2020-17221.pdf": [
        "Airworthiness Directives; The Boeing\nCompany Airplanes",
        "identified in this NPRM, contact Boeing\nCommercial Airplanes, Attention:",
    ],
    "pdf/geobase-nhn-data-model-en.pdf": [
        "National Hydro Network, Canada, Level 1",
        "| September 2002 | Draft 01 | First draft for discussion with Nova Scotia |",
    ],
    "pdf/huckfinn-p22-scan-no-text.pdf": ["tip-toeing along a path", "Miss Watson"],
    "pdf/la-precinct-bulletin-2014-p1.pdf": ["NEEL KASHKARI REP 247", "ALEX PADILLA DEM 64"],
    "pdf/multicolumn-latex.pdf": [
        "Two-Column Document with Lorem Ipsum",
        "Quisque ullamcorper placerat ipsum.",
    ],
    "pdf/nics-background-checks-2015-11.pdf": [
        "NICS Firearm Background Checks",
        "| Alabama | 18,870 | 23,022 | 22,650 |",
    ],
    "pdf/pdffill-demo-form.pdf": ["PDFill: PDF Drawing", "Goto Page 2: Line Tool"],
    "pdf/scotus-transcript-p1.pdf": ["IN THE SUPREME COURT", "ALEXANDRE MIRZAYANCE"],
    "pdf/siege-of-vicksburg-scan-ocr.pdf": ["A report creeps into camp that", "The Yankee Lookout."],
    "pdf/vector-text-as-curves.pdf": ["Sample Vector PDF for Testing", "should be used"],
    "pdf/wikipedia-ocr-article-printer-scan.pdf": [
        "Optical character recognition",
        "electronic conversion of images of typed",
    ],
    "pdf/word365-tagged.pdf": ["Liste numérotée", "Farfadet"],
    # DOCX
    "docx/apple-pages-bulleted-lists.docx": ["- Why did the chicken cross the road?\n  - Just because"],
    "docx/checkbox-form-tables.docx": ["ELDER ABUSE FORENSIC CENTER REFERRAL", "☒ Adult Protective Services"],
    "docx/equations-omml.docx": ["Linear Format", "\\int_{0}^{1}x"],
    "docx/footnotes.docx": ["Ouch[^1]", "[^1]: A tachyon walks into a bar."],
    "docx/libreoffice-converted-report.docx": [
        "# 第一章 竞争性谈判采购公告",
        "东阳市歌山镇农贸市场经营管理权项目",
    ],
    "docx/merged-cells.docx": ["| 12-0 | 1-1 | 1-2 | 1-3 |"],
    "docx/oilfield-procedure-nested-tables.docx": [
        "| Key Personnel | Drill Crew and Crane Crew |",
        "Lay Down Tubulars",
    ],
    "docx/renamed-main-part.docx": ["This is a link to my website."],
    "docx/tables-mammoth.docx": ["| Top left | Top right |\n|---|---|\n| Bottom left | Bottom right |"],
    "docx/tbl-props-nine-tables.docx": ["| a | b | c | d |\n|---|---|---|---|\n| e | f | g |  |"],
    "docx/utf8-bom.docx": ["This XML has a byte order mark."],
    "docx/zen-of-python.docx": ["# Beautiful is better than ugly.", "Namespaces are one honking great idea"],
    # XLSX (and the CSV that ships beside one of them)
    "xlsx/date-1904.xlsx": ["A: 2021-01-01 | B: 15"],
    "xlsx/hidden-sheets.xlsx": ["A: 1 | B: 2", "This workbook contains 4 sheets"],
    "xlsx/merged-range-two-sheets.xlsx": ["A: A3 | B: B3 | C: C3 | D: C3"],
    "xlsx/readxl-clippy-two-row-header.xlsx": ["name: Clippy | species: paperclip | death: 2007-01-01"],
    "xlsx/readxl-deaths-messy-layout.xlsx": [
        "Name: David Bowie | Profession: musician | Age: 69 | Has kids: TRUE | Date of birth: 1947-01-08"
    ],
    "xlsx/readxl-type-me.xlsx": ["maybe a datetime?: 2016-04-28 11:30 | explanation: date and time format"],
    "xlsx/utf8.xlsx": ["A: こんにちは | B: Japanese language"],
    "xlsx/utf8.expected.csv": ["column 1: Здравствуйте | column 2: Russian language"],
    # CSV
    "csv/acs2012-5yr-population.csv": ["fips: 31001 | name: Adams County, NE | total_population: 31299"],
    "csv/fy09-edu-recipients-by-state.csv": ["State Name: ALABAMA | State Abbreviate: AL | Code: 01"],
    "csv/ks-1033-program-data.csv": ["item_name: RIFLE,5.56 MILLIMETER | quantity: 1 | ui: Each"],
    "csv/mac-cr-newlines.csv": ["a: Once upon a time | b: 5 | c: 6"],
    "csv/no-header-row.csv": ["column 1: 1 | column 2: 2 | column 3: 3"],
    "csv/ragged-bad.csv": ["column_a: 1 | column_b: 27 | column 4: I'm too long!"],
    "csv/utf16-be.csv": ["a: 4 | b: 5 | c: ʤ"],
    "csv/utf8-bom.csv": ["foo: 4 | bar: 5 | baz: ʤ"],
    # Markdown and HTML
    "md/docx2python-README.md": ["the Par type captures some paragraph properties"],
    "md/pypdf-CHANGELOG.md": ["## Version 7.1.1, 2026-11-18", "Reject zero-step slices in PageRange (#4404)"],
    "html/apache-default.html": ["Server Version: Apache/2.4.7 (Ubuntu)"],
    "html/utf8-page.html": ["Markus Kuhn [ˈmaʳkʊs kuːn]", "the euro symbol: │ 14.95 €"],  # noqa: RUF001
}

FAILS = {
    "pdf/encrypted-libreoffice-openpassword.pdf": ("password_protected", "password protected"),
    "xlsx/password-protected.xlsx": ("password_protected", "password protected"),
    "docx/empty.docx": ("no_text", "no text"),
    "docx/having-images.docx": ("no_text", "no text"),
}


def test_every_shared_document_has_an_expectation() -> None:
    on_disk = {str(path.relative_to(DOCUMENTS)) for path in DOCUMENTS.rglob("*") if path.is_file()} - {
        "MANIFEST.tsv"
    }
    assert on_disk, f"no documents under {DOCUMENTS}"
    assert on_disk == set(READS) | set(FAILS)


@pytest.mark.parametrize("relative", sorted(READS))
def test_document_text_holds_what_the_file_shows(relative: str) -> None:
    extracted = text(relative)
    for expected in READS[relative]:
        assert expected in extracted, f"{expected!r} missing from {relative}"


@pytest.mark.parametrize("relative", sorted(FAILS))
def test_document_fails_with_its_specific_reason(relative: str) -> None:
    reason, phrase = FAILS[relative]
    error = failure(relative)
    assert error.reason == reason
    assert phrase in error.message.lower()
    assert error.detail and error.detail != error.message
