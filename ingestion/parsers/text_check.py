"""Whether text reads as text: the check a PDF page's text layer, and then OCR's reading of it, must pass.

A text layer can hold the right glyphs under the wrong code points (a font without a Unicode map draws
"Hello" while its text says "+HOOR"), or words read backwards. Glyph-level signs (unmapped glyphs,
private-use characters) are counted by the PDF reader; this module judges the words:
  shape     the share of tokens shaped like words: letters in one case pattern (with a vowel, in the
            Latin, Greek and Cyrillic scripts), numbers, dates and amounts, short codes like "ZX-4471";
  language  the page's language is the one whose common words it uses most (jusText's stop lists, read
            as data files); lowercase prose that uses no common word of any language is not prose;
  reversed  words that are common words only when read backwards.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# Below this share of word-shaped tokens a text is not text.
MIN_WORD_SHARE = 0.5
# Lowercase or all-caps words (three letters or more) needed before "no common word" says anything: a
# table or a list of names has few, prose has many.
MIN_PROSE_WORDS = 20
# Prose in any language is a third or more common words (measured: 30-45 % in English, French and
# German pages); garbage that happens to spell a common word now and then stays far below this.
MIN_COMMON_SHARE = 0.05
MIN_REVERSED_HITS = 3
# Dashes, bullets and ellipses make a share of any page; a page that is mostly symbols is letters mapped
# to punctuation.
MAX_SYMBOL_SHARE = 0.6
MIN_SYMBOL_TOKENS = 10
# A letters-and-digits token longer than this is words run together (a text layer that lost its
# spaces) rather than a code or a model number.
MAX_CODE_LENGTH = 12
# Tesseract's language codes, as jusText names its stop lists; the first seven are always consulted.
LANGUAGES = {
    "eng": "English",
    "deu": "German",
    "fra": "French",
    "spa": "Spanish",
    "ita": "Italian",
    "por": "Portuguese",
    "nld": "Dutch",
    "pol": "Polish",
    "ces": "Czech",
    "swe": "Swedish",
    "dan": "Danish",
    "nor": "Norwegian_Bokmal",
    "fin": "Finnish",
    "hun": "Hungarian",
    "ron": "Romanian",
    "tur": "Turkish",
    "rus": "Russian",
    "ukr": "Ukrainian",
    "ell": "Greek",
    "vie": "Vietnamese",
    "ind": "Indonesian",
}
COMMON = tuple(LANGUAGES)[:7]

_TOKEN = re.compile(r"\S+")
# After the punctuation and symbols around it are stripped: 12, 1,500.00, 2023-01-05, 10:30, 5kg, 2nd.
_NUMBER = re.compile(r"\d[\d.,:/'\u2019\-\u2212]*[^\W\d_]{0,3}")

# A change from lower to upper case starts a new word: NetworkLinearElement, iPhone, McDonald.
_CAMEL = re.compile(r"[^\W\d_][^\W\d_A-Z]*")
_PLAIN = re.compile(r"[a-z]+|[A-Z][a-z]*|[A-Z]+")
_PLAIN_VOWEL = re.compile(r"[aeiouyAEIOUY]")
_LATIN_VOWELS = set("aeiouyæøœ")
_GREEK_VOWELS = set("αεηιοωυ")
_CYRILLIC_VOWELS = set("аеёиоуыэюяіїє")
# Acronyms and abbreviations (HTTPS, Mrs, pgs) go without vowels; longer words without one are not words.
MAX_LOWER_WITHOUT_VOWEL = 3
MAX_UPPER_WITHOUT_VOWEL = 5


@dataclass(frozen=True)
class TextReading:
    tokens: int  # tokens with a letter or a digit
    word_shaped: int
    words: int  # tokens of three letters or more, letters only
    prose_words: int  # lowercase or all-caps words of three letters or more
    language: str
    common_hits: int
    reversed_hits: int
    symbols: int = 0  # tokens of mixed punctuation and symbols ("$%&"), not dashes, bullets or dot leaders

    @property
    def word_share(self) -> float:
        return self.word_shaped / self.tokens if self.tokens else 1.0


def _strip_edges(token: str) -> str:
    """The token without the punctuation and symbols around it ("(born", "GeoBase®", "«CodeList»")."""
    if token[:1].isalnum() and token[-1:].isalnum():
        return token
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start])[0] in "PSZ":
        start += 1
    while end > start and unicodedata.category(token[end - 1])[0] in "PSZ":
        end -= 1
    return token[start:end]


def _vowels(letter: str) -> set[str] | None:
    """The vowels of the letter's script when it is Latin, Greek or Cyrillic, else None (no vowel test)."""
    name = unicodedata.name(letter, "")
    if name.startswith("LATIN"):
        return _LATIN_VOWELS
    if name.startswith("GREEK"):
        return _GREEK_VOWELS
    if name.startswith("CYRILLIC"):
        return _CYRILLIC_VOWELS
    return None


def _word_shaped_letters(word: str) -> bool:
    vowels = _vowels(word[0])
    if vowels is None:
        return True
    limit = MAX_UPPER_WITHOUT_VOWEL if word.isupper() else MAX_LOWER_WITHOUT_VOWEL
    if len(word) <= limit:
        return True
    bases = unicodedata.normalize("NFD", word.lower())
    return any(c in vowels for c in bases)


def _part_shaped(part: str) -> bool:
    # Combining marks (Arabic vowel signs, Indic matras) and modifier letters belong to the word.
    part = "".join(c for c in part if unicodedata.category(c) not in ("Mn", "Mc", "Me", "Lm", "Sk"))
    if not part or part.isdigit():
        return True
    if part.isalpha():
        return all(_word_shaped_letters(word) for word in _CAMEL.findall(part) or [part])
    if part.isalnum():
        # Codes and model numbers (B737, 2nd, 06AUP1); a long run of both is words that lost their spaces.
        return len(part) <= MAX_CODE_LENGTH
    return False


def word_shaped(token: str) -> bool | None:
    """Whether a token is shaped like a word, a number or a code; None for punctuation and symbols alone."""
    return _shaped(_strip_edges(token))


def _shaped(token: str) -> bool | None:
    if _PLAIN.fullmatch(token):  # most tokens of most pages: the cheap test first
        limit = MAX_UPPER_WITHOUT_VOWEL if token.isupper() else MAX_LOWER_WITHOUT_VOWEL
        return len(token) <= limit or _PLAIN_VOWEL.search(token) is not None
    if not any(c.isalnum() for c in token):
        return None
    if _NUMBER.fullmatch(token):
        return True
    return all(_part_shaped(part) for part in _split_at_punctuation(token) if part)


def _split_at_punctuation(token: str) -> list[str]:
    """Punctuation inside a token joins words: file paths, identifiers (CL_Water, Model::Event),
    Dike/Levee, it's, and the full-width commas and brackets of Chinese and Japanese, which put no
    spaces between words at all. Symbols ($, +, <) do not: in a word they are a wrong mapping."""
    if token.isalnum():
        return [token]
    parts, start = [], 0
    for index, char in enumerate(token):
        if unicodedata.category(char)[0] == "P":
            parts.append(token[start:index])
            start = index + 1
    parts.append(token[start:])
    return parts


@cache
def common_words(language: str) -> frozenset[str]:
    """jusText's stop list for a language (its most frequent words), read from the package's data
    files: importing jusText would load its HTML machinery for nothing."""
    spec = importlib.util.find_spec("justext")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / "stoplists" / f"{language}.txt"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return frozenset()
    return frozenset(word.lower() for line in lines if (word := _strip_edges(line.strip())))


@cache
def all_languages() -> tuple[str, ...]:
    spec = importlib.util.find_spec("justext")
    if spec is None or not spec.submodule_search_locations:
        return ()
    folder = Path(next(iter(spec.submodule_search_locations))) / "stoplists"
    return tuple(sorted(path.stem for path in folder.glob("*.txt")))


def _best_language(counts: Counter[str], languages: list[str]) -> tuple[str, int, int]:
    """(language, hits, hits read backwards) for the language whose common words the text uses most."""
    backwards_words = [(word[::-1], n) for word, n in counts.items() if word[::-1] != word]
    best = ("", 0, 0)
    for language in languages:
        vocabulary = common_words(language)
        hits = sum(n for word, n in counts.items() if word in vocabulary)
        backwards = sum(n for word, n in backwards_words if word in vocabulary)
        if (hits, backwards) > best[1:]:
            best = (language, hits, backwards)
    return best


def _symbol_soup(token: str) -> bool:
    """A token of mixed symbols ("$%&", "'(!)"), not a filler (a dash, a bullet, a leader of dots)."""
    return len(set(token)) > 1 or unicodedata.category(token[0])[0] == "S"


def read_text(text: str, languages: str = "eng") -> TextReading:
    """How word-like `text` is; `languages` are the deployment's OCR languages ("eng+deu")."""
    # Pages repeat their words: each distinct token is judged once and counted as often as it occurs.
    counts = Counter(_TOKEN.findall(text))
    tokens = shaped = prose = symbols = 0
    words: Counter[str] = Counter()
    for token, count in counts.items():
        stripped = _strip_edges(token)
        shape = _shaped(stripped)
        if shape is None:
            symbols += count * _symbol_soup(token)
            continue
        tokens += count
        shaped += count * shape
        # Words of one or two letters are common words somewhere among a hundred languages by chance.
        if stripped.isalpha() and len(stripped) > 2:
            words[stripped.lower()] += count
            # Capitalised words are names and headings as often as not; lowercase (or shouted) runs
            # of words are prose, and prose uses its language's common words.
            if len(stripped) > 2 and (stripped.islower() or stripped.isupper()):
                prose += count
    configured = [LANGUAGES[code] for code in languages.split("+") if code in LANGUAGES]
    consulted = list(dict.fromkeys(configured + [LANGUAGES[code] for code in COMMON]))
    language, hits, backwards = _best_language(words, consulted)
    alphabetic = sum(words.values())
    if hits < MIN_COMMON_SHARE * alphabetic and prose >= MIN_PROSE_WORDS:
        # Before calling prose garbage, every language jusText knows gets its say.
        language, hits, backwards = _best_language(words, list(all_languages()))
    return TextReading(tokens, shaped, alphabetic, prose, language, hits, backwards, symbols)


def text_problem(text: str, languages: str = "eng") -> str | None:
    """Why `text` does not read as text, for people ("words read backwards"), or None when it does."""
    reading = read_text(text, languages)
    everything = reading.tokens + reading.symbols
    if everything >= MIN_SYMBOL_TOKENS and reading.symbols > MAX_SYMBOL_SHARE * everything:
        return "its tokens are mostly symbols"
    if reading.tokens >= 3 and reading.word_share < MIN_WORD_SHARE:
        return f"only {reading.word_share:.0%} of its tokens are shaped like words"
    if reading.reversed_hits >= MIN_REVERSED_HITS and reading.reversed_hits > 2 * reading.common_hits:
        return "its words read backwards"
    if reading.prose_words >= MIN_PROSE_WORDS and reading.common_hits < MIN_COMMON_SHARE * reading.words:
        return "its words are not words of any language"
    return None
