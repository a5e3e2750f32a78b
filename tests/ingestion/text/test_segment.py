"""The built-in answerer's units: whole sentences across wrapped lines, and lines that stand alone."""

import pytest

from ingestion.text import segment as segment_module
from ingestion.text.segment import CODE, HEADING, ITEM, PROSE, ROW, one_sentence, segment, sentences
from tests.factories import every_paragraph_through_pysbd


def texts(text: str) -> list[tuple[str, str]]:
    return [(u.kind, u.text) for u in segment(text)]


def test_a_wrapped_sentence_is_joined_before_it_is_split():
    assert texts("Returns are accepted within 30\ndays of purchase. Refunds take five days.") == [
        (PROSE, "Returns are accepted within 30 days of purchase."),
        (PROSE, "Refunds take five days."),
    ]


def test_a_wrapped_line_that_ends_on_a_connective_continues_even_before_a_capital():
    assert texts("Certain values are also forwarded to the\nFlask object so you can read them.") == [
        (PROSE, "Certain values are also forwarded to the Flask object so you can read them.")
    ]


def test_abbreviations_and_decimals_do_not_end_a_sentence():
    units = texts("Use a descaler, e.g. white vinegar, monthly. It takes 3.5 minutes at 2.2 bar. Done.")
    assert units == [
        (PROSE, "Use a descaler, e.g. white vinegar, monthly."),
        (PROSE, "It takes 3.5 minutes at 2.2 bar."),
        (PROSE, "Done."),
    ]


def test_file_names_with_a_leading_dot_do_not_end_a_sentence():
    assert texts("The files .env and .flaskenv are read at start. Nothing else is.") == [
        (PROSE, "The files .env and .flaskenv are read at start."),
        (PROSE, "Nothing else is."),
    ]


def test_a_dot_file_inside_a_path_does_not_end_a_sentence():
    # Seen on held-out sets (#52): "... the netrc file at ~/." and ".netrc, ..." made two halves of a fact.
    assert sentences("Credentials come from ~/.netrc, unless NETRC says otherwise. Then nothing else.") == [
        "Credentials come from ~/.netrc, unless NETRC says otherwise.",
        "Then nothing else.",
    ]
    assert sentences("The upload settings live in ~/.dput.cf on your machine. That is all.")[0] == (
        "The upload settings live in ~/.dput.cf on your machine."
    )


def test_code_lines_stand_alone_and_are_not_joined_to_prose():
    units = texts(
        "The config can be modified like any dictionary:\n"
        "app = Flask(__name__)\n"
        "app.config['TESTING'] = True\n"
        "$ flask --app hello run\n"
        "Certain values are forwarded too."
    )
    assert units == [
        (PROSE, "The config can be modified like any dictionary:"),
        (CODE, "app = Flask(__name__)"),
        (CODE, "app.config['TESTING'] = True"),
        (CODE, "$ flask --app hello run"),
        (PROSE, "Certain values are forwarded too."),
    ]


def test_list_items_are_units_of_their_own_and_take_their_wrapped_lines():
    units = texts(
        "We ship to:\n- Canada\n- Mexico and the\nUnited States, by road\n"
        "- Anywhere else by air. It costs more."
    )
    assert units == [
        (PROSE, "We ship to:"),
        (ITEM, "Canada"),
        (ITEM, "Mexico and the United States, by road"),
        (ITEM, "Anywhere else by air."),
        (ITEM, "It costs more."),
    ]
    blocks = [u.block for u in segment("- One thing.\n- Another thing. And more.")]
    assert blocks[1] == blocks[2] != blocks[0]  # sentences of one item share its block


def test_table_rows_are_units_of_their_own():
    assert texts("Plans:\n| Plan | Price |\n| Basic | 5 EUR |\n| Pro | 20 EUR |") == [
        (PROSE, "Plans:"),
        (ROW, "| Plan | Price |"),
        (ROW, "| Basic | 5 EUR |"),
        (ROW, "| Pro | 20 EUR |"),
    ]


def test_headings_are_recognised_and_carried_by_the_units_below():
    units = segment("Shipping Times\nExpress delivery takes two days.\n## Returns\nReturns are free.")
    assert [(u.kind, u.text, u.heading) for u in units] == [
        (HEADING, "Shipping Times", "Shipping Times"),
        (PROSE, "Express delivery takes two days.", "Shipping Times"),
        (HEADING, "Returns", "Returns"),
        (PROSE, "Returns are free.", "Returns"),
    ]


def test_lines_glued_by_chunking_are_put_back_on_their_own():
    # The chunker joins sentence-ending lines with a space: "... key. - DEBUG", "... tools. Error Tools".
    units = texts(
        "The env attribute maps to this key. - DEBUG\n- Whether debug mode is on.\n"
        "We cover better setups. Error Logging Tools\nSending error mails can overwhelm you."
    )
    assert units == [
        (PROSE, "The env attribute maps to this key."),
        (ITEM, "DEBUG"),
        (ITEM, "Whether debug mode is on."),
        (PROSE, "We cover better setups."),
        (HEADING, "Error Logging Tools"),
        (PROSE, "Sending error mails can overwhelm you."),
    ]


def test_program_output_and_code_comments_are_code_not_prose_or_headings():
    assert texts("TCP 127.0.0.1:5000 0.0.0.0:0 LISTENING 6847\n# equivalent to 'from hello import app'") == [
        (CODE, "TCP 127.0.0.1:5000 0.0.0.0:0 LISTENING 6847"),
        (CODE, "# equivalent to 'from hello import app'"),
    ]


def test_no_sentence_is_cut_across_a_page_of_wrapped_text():
    words = "the kettle keeps water hot for hours and switches itself off when it boils dry".split()
    sentences = [words[i : i + 9] for i in range(0, 6)]
    # Each sentence wrapped after its fourth word, as a page's source would wrap it.
    wrapped = "\n".join(
        line for s in sentences for line in (" ".join(s[:4]).capitalize(), " ".join(s[4:]) + ".")
    )
    expected = [(" ".join(s) + ".").capitalize() for s in sentences]
    assert [u.text for u in segment(wrapped)] == expected


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("Flask is a lightweight WSGI web application framework", True),
        ("It began as a simple wrapper around Werkzeug and Jinja!", True),
        ('He said "use the factory pattern."', True),
        ("(See the tutorial.)", True),
        ("Keep secrets in the .env file", True),  # a word's leading dot is not a mark
        ("Install it with pip install -e ..", False),  # pysbd ends a sentence at the first dot
        ("Version 2.3 added it", False),
        ("Use e.g. a descaler. Then rinse.", False),
        ("Wait… then go", False),
    ],
)
def test_a_paragraph_without_an_inner_sentence_mark_is_one_sentence(text, whole):
    assert sentences(text) == through_pysbd(text)
    # As `sentences` asks it: after a word's leading dot is set aside.
    assert one_sentence(segment_module._LEADING_DOT.sub(segment_module._DOT_STANDIN, text)) is whole
    if whole:
        assert sentences(text) == [text]


def test_the_one_sentence_shortcut_gives_pysbds_sentences_on_the_flask_docs():
    """Every paragraph and list item of the shared Flask docs gets the same sentences with the shortcut as
    through pysbd, and the shortcut takes a good share of them."""
    from tests.bench.site_inputs import flask_paragraphs

    paragraphs = flask_paragraphs()
    shortcut = [sentences(text) for text in paragraphs]
    assert shortcut == [through_pysbd(text) for text in paragraphs]
    taken = sum(len(found) == 1 for found in shortcut)
    assert taken > 1000, taken


def through_pysbd(text: str) -> list[str]:
    with every_paragraph_through_pysbd():
        return sentences(text)
