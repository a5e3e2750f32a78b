"""Follow-up questions made searchable without a model: the previous query's topic is added."""

from agents.answer.condense import condense, content_words, is_follow_up


def test_an_elliptic_follow_up_gets_the_previous_topic():
    query = condense("and on Sundays?", "When is the Lyon shop open on Saturdays?")
    assert query.startswith("and on Sundays?")
    assert {"Lyon", "shop", "open", "Saturdays"} <= set(query.strip("()?").replace("(", " ").split())


def test_a_pronoun_follow_up_gets_the_setting_it_refers_to():
    query = condense("what is its default?", "What does SESSION_COOKIE_NAME control?")
    assert "SESSION_COOKIE_NAME" in query


def test_a_chain_of_follow_ups_keeps_the_topic_through_the_condensed_previous_query():
    first = condense("what is its default?", "What does SESSION_COOKIE_NAME control?")
    second = condense("and can it be changed?", first)
    assert "SESSION_COOKIE_NAME" in second


def test_a_question_that_names_its_own_topic_is_left_alone():
    question = "How do I descale the kettle with white vinegar?"
    assert not is_follow_up(question)
    assert condense(question, "Do you ship to Canada?") == question


def test_without_a_previous_question_nothing_is_added():
    assert condense("and on Sundays?", None) == "and on Sundays?"


def test_content_words_drop_stop_words_question_words_and_pronouns_once_each():
    assert content_words("What is the default of it, and what is the default of PORT?") == ["default", "PORT"]
