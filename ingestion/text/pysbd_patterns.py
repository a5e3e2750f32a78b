"""pysbd with its regular expressions compiled once per process.

pysbd builds its patterns from strings on every call (one per abbreviation a paragraph contains, among
others) and hands them to the `re` module's functions, whose cache holds 512 compiled patterns. It also
compiles one pattern per sentence it returns, to find the sentence in the text. Together they are more
than the cache holds, so it turned over and most calls compiled their patterns again: on the Flask docs,
58 % of segmenting the chunks' sentences went to `re`'s compiler (docs/BENCHMARKS.md).

Here pysbd's modules get a stand-in for `re` whose functions compile each (pattern, flags) once; what they
match is `re`'s own. The segmenter finds each sentence with `str.find`, which is what its pattern (the
sentence, escaped, then `\\s*`) matched.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pysbd

# pysbd's reusable patterns: ~1,000 for English (its 188 abbreviations, in the cases and with the
# whitespace before them that a text has, and its rules); ~1.6 KB each.
MAX_PATTERNS = 4096


@lru_cache(maxsize=MAX_PATTERNS)
def compiled(pattern: str | re.Pattern, flags: int = 0) -> re.Pattern:
    return re.compile(pattern, flags)


# re's module functions, with the same parameters (`repl`: a string or a function of the match).
PatternLike = str | re.Pattern[str]


def _sub(pattern: PatternLike, repl: Any, string: str, count: int = 0, flags: int = 0) -> str:
    return compiled(pattern, flags).sub(repl, string, count)


def _subn(pattern: PatternLike, repl: Any, string: str, count: int = 0, flags: int = 0) -> tuple[str, int]:
    return compiled(pattern, flags).subn(repl, string, count)


def _split(pattern: PatternLike, string: str, maxsplit: int = 0, flags: int = 0) -> list[Any]:
    return compiled(pattern, flags).split(string, maxsplit)


def _findall(pattern: PatternLike, string: str, flags: int = 0) -> list[Any]:
    return compiled(pattern, flags).findall(string)


def _finditer(pattern: PatternLike, string: str, flags: int = 0) -> Iterator[re.Match[str]]:
    return compiled(pattern, flags).finditer(string)


def _search(pattern: PatternLike, string: str, flags: int = 0) -> re.Match[str] | None:
    return compiled(pattern, flags).search(string)


def _match(pattern: PatternLike, string: str, flags: int = 0) -> re.Match[str] | None:
    return compiled(pattern, flags).match(string)


def _fullmatch(pattern: PatternLike, string: str, flags: int = 0) -> re.Match[str] | None:
    return compiled(pattern, flags).fullmatch(string)


def _stand_in() -> types.ModuleType:
    module = types.ModuleType("re", "re, with every pattern compiled once (ingestion.text.pysbd_patterns).")
    module.__dict__.update({name: getattr(re, name) for name in dir(re) if not name.startswith("__")})
    module.__dict__.update(
        sub=_sub,
        subn=_subn,
        split=_split,
        findall=_findall,
        finditer=_finditer,
        search=_search,
        match=_match,
        fullmatch=_fullmatch,
        compile=compiled,
    )
    return module


RE = _stand_in()


def install() -> None:
    """Point every loaded pysbd module that uses `re` at the stand-in (idempotent)."""
    for name, module in list(sys.modules.items()):
        if (name == "pysbd" or name.startswith("pysbd.")) and getattr(module, "re", None) is re:
            module.__dict__["re"] = RE  # a module's attributes are its __dict__


class Segmenter(pysbd.Segmenter):
    def sentences_with_char_spans(self, sentences: list[str]) -> list[pysbd.utils.TextSpan]:
        """pysbd's own, with `str.find` for its per-sentence `re.finditer(escape(sent) + r"\\s*")`:
        each sentence's first occurrence, with the whitespace after it, that ends past the one before."""
        text, spans, prior_end = self.original_text, [], 0
        for sent in sentences:
            span = _span(text, sent, prior_end) if sent else _pattern_span(text, sent, prior_end)
            if span is not None:
                spans.append(span)
                prior_end = span.end
        return spans


def _span(text: str, sent: str, prior_end: int) -> pysbd.utils.TextSpan | None:
    start = text.find(sent)
    while start >= 0:
        end = start + len(sent)
        while end < len(text) and text[end].isspace():  # what `\\s` matches in a str pattern
            end += 1
        if end > prior_end:
            return pysbd.utils.TextSpan(text[start:end], start, end)
        start = text.find(sent, end)  # finditer goes on after the match
    return None


def _pattern_span(text: str, sent: str, prior_end: int) -> pysbd.utils.TextSpan | None:
    """pysbd's way, for a sentence `str.find` would treat differently (an empty one)."""
    for match in re.finditer(re.escape(sent) + r"\s*", text):
        if match.end() > prior_end:
            return pysbd.utils.TextSpan(match.group(), match.start(), match.end())
    return None


def segmenter(language: str = "en") -> pysbd.Segmenter:
    """A pysbd segmenter for `language`, with pysbd's modules on the stand-in."""
    made = Segmenter(language=language, clean=False)
    install()
    return made
