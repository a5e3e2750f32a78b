"""pysbd's abbreviation pass, with the same output and without its wasted work.

For every line, pysbd tries each of its 188 abbreviations that occurs in the line as a substring ("is",
"me", "no", "p" and "v" occur in most lines): it finds every place the abbreviation starts a word, and
rewrites the whole line once per place, turning a dot after it into a stand-in where what follows allows
it. Most of that finds nothing to rewrite: on the Flask docs it was a third of segmenting. Three
shortcuts, each exact:

- A line without a dot is left as it is: every rewrite needs a dot after the abbreviation, and
  pysbd skips its dotted abbreviations ("e.g", "ph.d") when they are not in the line.
- In an ASCII line, an abbreviation of letters only is skipped when it is not followed by a dot anywhere
  in the line: nothing it could rewrite is there.
- A rewrite is made once per abbreviation as written. A rewrite turns dots into the stand-in, never
  letters or spaces, so what follows each later dot can only lose dots, never gain them; the same
  rewrite again finds nothing the first did not.
"""

from __future__ import annotations

import re

from pysbd.abbreviation_replacer import replace_pre_number_abbr, replace_prepositive_abbr
from pysbd.lang.english import English

from ingestion.text.pysbd_patterns import compiled

_LETTERS_ONLY = frozenset(
    a.strip() for a in English.Abbreviation.ABBREVIATIONS if re.fullmatch(r"[a-z]+", a.strip())
)


class AbbreviationReplacer(English.AbbreviationReplacer):
    def search_for_abbreviations_in_string(self, text: str) -> str:
        if "." not in text:
            return text
        abbreviations = self.lang.Abbreviation
        lowered = text.lower()
        ascii_line = text.isascii()
        for abbr in abbreviations.ABBREVIATIONS:
            stripped = abbr.strip()
            if stripped not in lowered:
                continue
            if ascii_line and stripped in _LETTERS_ONLY and stripped + "." not in lowered:
                continue
            # pysbd's two patterns, as it writes them (its braces are literal: the second finds only
            # "{abbr} " in the text).
            matches = compiled(rf"(?:^|\s|\r|\n){stripped}", re.IGNORECASE).findall(text)
            if not matches:
                continue
            char_array = compiled(r"(?<={" + str(re.escape(stripped)) + "} ).{1}").findall(text)
            made = set()
            for ind, match in enumerate(matches):
                char = char_array[ind] if ind < len(char_array) else ""
                key = match.strip().lower()
                # pysbd's scan_for_replacements: no rewrite before a capital, unless prepositive.
                if char.isupper() and key not in abbreviations.PREPOSITIVE_ABBREVIATIONS:
                    continue
                if match.strip() in made:
                    continue  # the same rewrite again finds nothing new (the module's docstring)
                made.add(match.strip())
                if key in abbreviations.PREPOSITIVE_ABBREVIATIONS:
                    text = replace_prepositive_abbr(text, match)
                elif key in abbreviations.NUMBER_ABBREVIATIONS:
                    text = replace_pre_number_abbr(text, match)
                else:
                    text = self.replace_period_of_abbr(text, match)
        return text


class FastEnglish(English):
    """English as pysbd has it, with the abbreviation pass above."""

    AbbreviationReplacer = AbbreviationReplacer
