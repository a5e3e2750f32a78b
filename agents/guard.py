"""The prompt-injection guard: our sources are data, never commands.

Passages are fenced as data for a model (`fence`), and sentences that address the assistant with
instructions are recognised (`is_instruction`) so the extractive answerer never repeats them as if
they were answers.
"""

from __future__ import annotations

import re

_INSTRUCTION = re.compile(
    r"""(
        \b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|your)\b.{0,30}
            \b(instructions?|prompts?|rules?|directions?|messages?)\b
      | \byou\s+are\s+now\b
      | \b(act|behave|respond)\s+as\s+(if|an?|the)\b
      | \bsystem\s+prompt\b
      | \b(new|updated)\s+instructions?\b
      | \bdo\s+not\s+(tell|mention|reveal)\b.{0,30}\buser\b
      | \b(reveal|print|output|repeat)\b.{0,30}\b(prompt|instructions|secret|api\s*key|password)s?\b
      | <\s*/?\s*(system|assistant|instructions?)\s*>
    )""",
    re.IGNORECASE | re.VERBOSE | re.DOTALL,
)


_FENCE_BREAK = re.compile(r"<\s*(/?)\s*(passage|context|system)", re.IGNORECASE)


def is_instruction(sentence: str) -> bool:
    return bool(_INSTRUCTION.search(sentence))


def fence(text: str) -> str:
    """Make passage text safe to place inside <passage> tags: it cannot close the fence."""
    return _FENCE_BREAK.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)
