"""What a question asks for, and whether a piece of text states it.

A question's form says what kind of fact answers it: "when" wants a time or a date, "how many" a number,
"how long" a number with its unit, "which version" a version, "... by default" the default, "which
function/setting" a name from the code. Of two sentences that share the question's words, the one
stating that kind of fact is the answer ("On Sundays there is a single crossing at 11:05", not "Tickets
are sold on board"). The fact must be news: a time the question itself names ("after 18:00?") does not
answer it. Only the form of the question is read, never its topic: nothing here knows a site's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from retrieval.keyword import STOP_WORDS

TIME, COUNT, QUANTITY, VERSION, DEFAULT, IDENTIFIER = (
    "time",
    "count",
    "quantity",
    "version",
    "default",
    "identifier",
)

_ASKS = {
    # "When does the ferry leave?", not "When a request ends, which context is popped first?": a "when"
    # followed by its verb asks for a time, one followed by a clause only sets the scene.
    TIME: r"^\s*when\s+(?:do|does|did|is|are|was|were|will|would|can|could|should|shall|has|have|had)\b"
    r"|\b(?:what|which)\s+(?:time|times|day|days|date|dates|year|month|hour|hours)\b"
    r"|\bat what time\b|\bhow (?:early|late)\b",
    COUNT: r"\bhow many\b|\bwhat number of\b",
    QUANTITY: r"\bhow (?:much|long|often|big|large|small|far|old|fast|high|wide|tall|heavy|deep)\b"
    r"|\bwhat (?:size|length|percentage|amount|limit|duration)\b",
    VERSION: r"\b(?:which|what)\s+(?:\w+\s+)?versions?\b",
    # The default, named or described: "if I don't change it", "when I don't choose one", "if I leave the
    # settings alone", "unless told otherwise".
    DEFAULT: r"\bdefault(?:s|ed)?\b|\bunless (?:\w+ )?(?:told|set|specified|configured) otherwise\b"
    r"|\b(?:if|when|unless) (?:i|you|we|one) (?:don't|do not|didn't|did not|never|leave)\b"
    r"|\bout of the box\b|\bwithout (?:any |a )?(?:configuration|configuring|config|settings?|options?)\b",
    IDENTIFIER: r"\b(?:which|what)\s+(?:\w+\s+)?(?:functions?|methods?|decorators?|settings?"
    r"|config(?:uration)? keys?|options?|variables?|class(?:es)?|attributes?|parameters?|arguments?|flags?"
    r"|commands?|hooks?|signals?|exceptions?|errors?|keys?|modules?|fields?|properties|property)\b",
}
_ASKS_PATTERNS = {kind: re.compile(pattern, re.IGNORECASE) for kind, pattern in _ASKS.items()}

_MONTHS = (
    "january|february|march|april|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty"
    "|sixty|hundred|thousand|million|billion|dozen|single|twice|half"
)
_NUMBER = rf"\b\d[\d,.]*|\b(?:{_NUMBER_WORDS})\b"
_STATES = {
    TIME: r"\b\d{1,2}:\d{2}\b"  # 06:40, 18:15
    r"|\b\d{1,2}(?:[.:]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)(?!\w)"
    r"|\b(?:noon|midday|midnight|daily|weekly|monthly|yearly|annually|tomorrow|yesterday|tonight)\b"
    r"|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\bweekdays?\b|\bweekends?\b"
    rf"|\b(?:{_MONTHS})\.?\s+\d{{1,4}}\b|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS}|may)\b"
    r"|\bMay\s+\d|\b\d{4}-\d{2}-\d{2}\b|\b(?:1[89]|20)\d{2}\b"  # "May 3" (not the verb), ISO dates, years
    r"|\bevery\s+(?:day|night|morning|evening|week|month|year|hour|minute)\b",
    COUNT: _NUMBER,
    # Money, a keyword argument ("days=31"), or a number and its unit ("25 minutes", "16 x 16 pixels",
    # "10%", "four very common ways"): the word after the number, when it is not a function word
    # (checked in _matches), so "Python 3.7 and newer" is not a quantity.
    QUANTITY: r"[$€£¥]\s?\d[\d,.]*|\b[a-z_]+=\d+"
    rf"|(?:{_NUMBER})\s*(?:[x\u00d7*]\s*\d[\d,.]*\s*)?(?:very\s+)?(?P<unit>%|[^\W\d_]+)",
    VERSION: r"\bv?\d+\.\d+(?:\.\d+)*\b|[<>=]=?\s*v?\d+(?:\.\d+)*|\bv\d+\b",
    # "Default: 300", "defaults to 4093", "by default".
    DEFAULT: r"\bdefault",
    # A name as code spells it: SESSION_COOKIE_NAME, url_for(), @app.route, app.config,
    # RequestEntityTooLarge, --extra-files, follow_redirects=True.
    IDENTIFIER: r"\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[A-Za-z_]\w+\.[A-Za-z_]\w*\b"
    r"|\b\w+\(\)|@\w+|(?<![\w-])--?[a-z][\w-]*\b",
}
_STATES_PATTERNS = {kind: re.compile(pattern, re.IGNORECASE) for kind, pattern in _STATES.items()}
_STATES_PATTERNS[IDENTIFIER] = re.compile(_STATES[IDENTIFIER])  # case is what makes a CamelCase name


def expected_kinds(question: str) -> frozenset[str]:
    """The kinds of fact the question's form asks for ("How long ... by default?": a quantity and a
    default); empty when its form says nothing (a "what" or "why" question)."""
    return frozenset(kind for kind, pattern in _ASKS_PATTERNS.items() if pattern.search(question))


def states(kind: str, text: str, question: str = "") -> bool:
    """Whether `text` states a fact of that kind that `question` does not already name (a default is
    stated by saying "default", whatever the question says)."""
    asked = _normalised(question)
    return any(
        kind == DEFAULT or not re.search(rf"(?<!\w){re.escape(_normalised(found))}(?!\w)", asked)
        for found in _matches(kind, text)
    )


def _matches(kind: str, text: str) -> Iterator[str]:
    for match in _STATES_PATTERNS[kind].finditer(text):
        unit = match.groupdict().get("unit")
        if unit is not None and unit != "%" and unit.lower() in STOP_WORDS:
            continue
        yield match.group(0)


def _normalised(text: str) -> str:
    return " ".join(text.lower().split())
