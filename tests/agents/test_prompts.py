"""The context template and its guard."""

from agents.prompts import DEFAULT_CONTEXT_TEMPLATE, template_problems


def test_the_default_template_has_the_guard():
    assert template_problems(DEFAULT_CONTEXT_TEMPLATE) == ([], [])


def test_a_template_without_context_is_an_error():
    errors, _ = template_problems("Answer nicely.")
    assert errors and "{context}" in errors[0]


def test_a_template_without_a_guard_warns():
    errors, warnings = template_problems("Here is what we know:\n{context}")
    assert errors == [] and "ignore instructions" in warnings[0]
