"""The built-in answerer: no generative model, so it answers with whole sentences of the retrieved
passages that answer the question, each group cited by its passage number (see select.py)."""

from __future__ import annotations

from dataclasses import dataclass

from agents.answer.select import choose, render
from agents.prompts import NumberedPassage

NOTHING_FOUND = "I couldn't find anything about that in the knowledge I have."


@dataclass(frozen=True)
class ExtractiveAnswer:
    text: str
    cited: list[int]  # passage numbers; empty exactly when nothing was found

    @property
    def found(self) -> bool:
        return bool(self.cited)


def extractive_answer(question: str, numbered: list[NumberedPassage]) -> ExtractiveAnswer:
    selections = choose(question, numbered)
    if not selections:
        return ExtractiveAnswer(NOTHING_FOUND, [])
    titles = {item.number: item.passage.document_title or item.passage.source_title for item in numbered}
    return ExtractiveAnswer(render(selections, titles), [s.number for s in selections])
