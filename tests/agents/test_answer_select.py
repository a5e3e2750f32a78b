"""What the built-in answerer says: the relevant whole sentences, completed by the neighbours that carry
their fact, in page order, cited. Runs the configured embedder, as the chat does."""

import pytest

from agents.answer import NOTHING_FOUND, extractive_answer
from agents.answer.complete import complete
from agents.answer.expects import COUNT, DEFAULT, IDENTIFIER, QUANTITY, TIME, VERSION, expected_kinds, states
from agents.answer.select import usable_passages
from agents.prompts import NumberedPassage
from ingestion.text.segment import segment
from retrieval.services import Passage

SETTINGS_PAGE = """Builtin Configuration Values
The following configuration values are used internally by the kettle:
- BOIL_TIMEOUT
- How long the kettle may heat before it gives up, in seconds. It protects an empty
kettle from damage.
Default: 300
- SESSION_COOKIE_NAME
- The name of the session cookie. Can be changed in case you already have a cookie with the same name.
Default: 'session'
"""


def numbered(*texts: str, scores: tuple[float, ...] = ()) -> list[NumberedPassage]:
    return [
        NumberedPassage(
            number,
            Passage(
                chunk_id=f"c{number}",
                text=text,
                score=scores[number - 1] if scores else 0.8,
                source_id=1,
                source_title="Manual",
                source_kind="text",
                url="",
                document_id=number,
                document_title=f"Page {number}",
            ),
        )
        for number, text in enumerate(texts, 1)
    ]


def indexes_of(units, *texts: str) -> list[int]:
    return [next(i for i, u in enumerate(units) if u.text.startswith(t)) for t in texts]


def texts_of(units, indexes: list[int]) -> list[str]:
    return [units[i].text for i in indexes]


def test_a_setting_description_is_completed_by_its_name_and_default():
    units = segment(SETTINGS_PAGE)
    (description,) = indexes_of(units, "How long the kettle")
    assert texts_of(units, complete(units, description)) == [
        "BOIL_TIMEOUT",
        "How long the kettle may heat before it gives up, in seconds.",
        "Default: 300",
    ]


def test_a_lead_in_brings_its_list_and_a_table_row_its_header():
    units = segment("We ship to these countries:\n- Canada\n- Mexico\nPrices:\n| Zone | Price |\n| EU | 9 |")
    (lead_in, row) = indexes_of(units, "We ship", "| EU")
    assert texts_of(units, complete(units, lead_in)) == ["We ship to these countries:", "Canada", "Mexico"]
    assert texts_of(units, complete(units, row)) == ["| Zone | Price |", "| EU | 9 |"]


def test_a_sentence_that_points_back_brings_what_it_points_to():
    units = segment(
        "First, you need an icon. It should be 16 x 16 pixels.\n"
        "app.config['MAX_CONTENT_LENGTH'] = 16 * 1000 * 1000\n"
        "The code above limits uploads to 16 megabytes.\n"
        "How do you reset it? Hold the button for five seconds."
    )
    (pointer, code_note, question) = indexes_of(units, "It should", "The code above", "How do you reset")
    assert texts_of(units, complete(units, pointer))[0] == "First, you need an icon."
    code = "app.config['MAX_CONTENT_LENGTH'] = 16 * 1000 * 1000"
    assert code in texts_of(units, complete(units, code_note))
    assert texts_of(units, complete(units, question))[-1] == "Hold the button for five seconds."


def test_a_sentence_is_finished_by_the_one_that_carries_on_from_it():
    units = segment(
        "Requests will not guess the encoding if the Content-Type header contains text. In this "
        "situation, RFC 2616 specifies that the default charset must be ISO-8859-1. Other text follows."
    )
    (condition,) = indexes_of(units, "Requests will not guess")
    assert texts_of(units, complete(units, condition)) == [
        "Requests will not guess the encoding if the Content-Type header contains text.",
        "In this situation, RFC 2616 specifies that the default charset must be ISO-8859-1.",
    ]


def test_a_label_brings_the_description_that_follows_it():
    # An option's or setting's name on a line of its own names the topic; what it says follows.
    units = segment(
        "## Options\n--tocfile\nFilename for a table of contents file. Defaults to modules.\n"
        "--no-toc\nDo not create a table of contents file.\n## Environment\nNothing here."
    )
    (label,) = indexes_of(units, "--tocfile")
    assert texts_of(units, complete(units, label)) == [
        "--tocfile",
        "Filename for a table of contents file.",
        "Defaults to modules.",
    ]  # the next option's name starts its own description
    (sentence,) = indexes_of(units, "Filename for")
    assert complete(units, sentence) == [sentence, sentence + 1]  # its trailer; a sentence is no label


def test_the_answer_says_the_sentence_after_a_chosen_one_in_its_paragraph():
    text = (
        "## Limits\nThe REQUEST_BUFFER variable sets the largest ref negotiation request the backend "
        "accepts. The default is 10 megabytes.\n\nA different paragraph about logging output."
    )
    answer = extractive_answer("How large a ref negotiation request does the backend accept?", numbered(text))
    assert "The default is 10 megabytes." in answer.text
    assert "logging" not in answer.text


def test_an_faq_entry_is_answered_whole_when_it_is_short():
    units = segment(
        "## Python 2 Support?\nNo! As of Requests 2.28.0, Requests no longer supports Python 2.7. Users "
        "who have been unable to migrate should pin to requests<2.28.\n## Python 3 Support?\nYes!"
    )
    (matched,) = indexes_of(units, "As of Requests")
    assert texts_of(units, complete(units, matched)) == [
        "No!",
        "As of Requests 2.28.0, Requests no longer supports Python 2.7.",
        "Users who have been unable to migrate should pin to requests<2.28.",
    ]
    reasons = " ".join(f"Reason {n} is a long sentence of words." for n in range(20))
    long_entry = segment(f"## Why?\n{reasons}")
    (late,) = indexes_of(long_entry, "Reason 17")
    assert complete(long_entry, late) == [late]  # past the entry's first 500 characters: on its own


def test_the_answer_states_the_default_with_its_setting_and_cites_the_passage():
    answer = extractive_answer("What is the default name of the session cookie?", numbered(SETTINGS_PAGE))
    assert "SESSION_COOKIE_NAME: The name of the session cookie." in answer.text
    assert "Default: 'session'" in answer.text
    assert answer.text.endswith("[1]")
    assert answer.cited == [1]


def test_sentences_keep_their_page_order_and_each_passage_is_cited_after_its_own():
    kettle = (
        "Descale the kettle monthly with white vinegar.\n"
        "The kettle's limescale filter is dishwasher safe.\n"
        "Rinse the kettle twice after descaling it with vinegar."
    )
    shipping = "We ship to Canada and Mexico. Express delivery takes two days."
    answer = extractive_answer("How do I descale the kettle with vinegar?", numbered(shipping, kettle))
    assert answer.cited == [2]
    descale = answer.text.index("Descale the kettle monthly")
    rinse = answer.text.index("Rinse the kettle twice")
    assert descale < rinse < answer.text.index("[2]")


def test_a_wrapped_fact_is_stated_whole():
    answer = extractive_answer(
        "How long do I have to return an item?",
        numbered("Returns are accepted within 30\ndays of purchase. Refunds take five business days."),
    )
    assert "Returns are accepted within 30 days of purchase." in answer.text


def test_a_sentence_in_two_passages_is_scored_in_the_section_that_matches_the_question():
    logging = (
        "# Logging\nLogs are written to standard error. Colours are used on a terminal.\n"
        "On Windows, colorama is required.\nThe log level is WARNING unless you change it."
    )
    colours = (
        "# Colours on Windows\nThe terminal needs help to show colours on Windows.\n"
        "On Windows, colorama is required.\nInstall it with pip."
    )
    answer = extractive_answer("What do I need for colours on Windows?", numbered(logging, colours))
    assert answer.text.count("On Windows, colorama is required.") == 1
    assert answer.cited == [2]


def test_nothing_relevant_gives_the_nothing_found_answer_without_citations():
    answer = extractive_answer("Which trains run to Lyon at night?", numbered(SETTINGS_PAGE))
    assert answer.text == NOTHING_FOUND and answer.cited == []
    assert extractive_answer("Anything?", []).cited == []


def test_passages_far_below_the_best_one_are_not_used():
    passages = numbered("Strong passage.", "Weaker passage.", "Far weaker passage.", scores=(0.8, 0.5, 0.2))
    assert [p.number for p in usable_passages(passages)] == [1, 2]


# --- what the question asks for ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("When does the ferry leave on Sundays?", {TIME}),
        ("At what time does the shop open?", {TIME}),
        ("How many workers does the server start?", {COUNT}),
        ("Which Python versions are supported?", {VERSION}),
        ("What is the cookie called if I don't change it?", {DEFAULT}),
        ("Which extensions are turned on without any configuration?", {DEFAULT}),
        ("What name does the tool give the file when I don't choose one?", {DEFAULT}),
        ("What paper size does the PDF use if I leave the settings alone?", {DEFAULT}),
        ("How long does a permanent session last by default?", {QUANTITY, DEFAULT}),
        ("What is the default value of the ENV setting?", {DEFAULT}),
        ("Which decorator registers a view function?", {IDENTIFIER}),
        ("Which setting holds the secret key?", {IDENTIFIER}),
        ("When a request ends, which context is popped first?", set()),  # "when" sets the scene only
        ("Why shouldn't I name my file flask.py?", set()),
    ],
)
def test_the_question_form_says_which_kind_of_fact_answers_it(question, kinds):
    assert expected_kinds(question) == kinds


@pytest.mark.parametrize(
    ("kind", "stating", "not_stating"),
    [
        (TIME, "On Sundays there is a single crossing at 11:05.", "Tickets are sold on board."),
        (TIME, "The office closes on 24 December.", "The office is in the old harbour."),
        (QUANTITY, "The crossing takes 25 minutes.", "Flask supports Python 3.7 and newer."),
        (COUNT, "It follows at most 30 of them.", "It follows them until it gives up."),
        (VERSION, "Flask supports Python 3.7 and newer.", "Flask supports recent Pythons."),
        (QUANTITY, "There are four very common ways to do it.", "There are several ways to do it."),
        (QUANTITY, "PERMANENT_SESSION_LIFETIME = timedelta(days=31)", "The session is permanent."),
        (DEFAULT, "Defaults to 4093.", "Set it to 4093 to warn earlier."),
        (IDENTIFIER, "Use the route() decorator.", "Use a decorator to register the view."),
        (IDENTIFIER, "Set SESSION_COOKIE_NAME in the config.", "Set the name of the cookie in the config."),
        (IDENTIFIER, "Pass --extra-files to the command.", "Pass the extra files to the command."),
    ],
)
def test_a_unit_states_a_fact_of_the_asked_kind(kind, stating, not_stating):
    assert states(kind, stating)
    assert not states(kind, not_stating)


def test_a_fact_the_question_already_names_is_not_news():
    question = "Does the ferry leave after 18:15?"
    assert not states(TIME, "The ferry leaves at 18:15.", question)
    assert states(TIME, "The last ferry leaves at 21:00.", question)
    assert states(DEFAULT, "Defaults to True.", "Is it on by default?")


def test_a_when_question_is_answered_with_the_sentence_stating_a_time():
    page = (
        "The museum shop sells postcards of the island and opens its doors to all.\n\n"
        "Opening hours are 10:00 to 17:30."
    )
    answer = extractive_answer("When does the museum shop open?", numbered(page))
    assert "Opening hours are 10:00 to 17:30." in answer.text

    page = (
        "The museum shop opens for school groups by appointment, with a guide.\n\n"
        "The museum shop opens at 10:00."
    )
    answer = extractive_answer("When does the museum shop open?", numbered(page))
    assert answer.text == "The museum shop opens at 10:00. [1]"


def test_a_how_many_question_is_answered_with_the_number_and_its_unit():
    page = (
        "The hotel has rooms with a view of the sea and rooms facing the garden.\n\n"
        "There are 42 rooms in the hotel."
    )
    answer = extractive_answer("How many rooms does the hotel have?", numbered(page))
    assert answer.text == "There are 42 rooms in the hotel. [1]"
