"""Names as English words: identifiers in words, English plurals, and the noun for a row of a table.

One place for the words envsynth derives from a blueprint's names when the blueprint
does not give its own (``called``, ``label``): tool descriptions, messages and warnings
all take their plurals from :func:`plural`.
"""

from __future__ import annotations

import re

UNCOUNTABLE = frozenset(
    {
        "advice",
        "baggage",
        "data",
        "equipment",
        "evidence",
        "feedback",
        "furniture",
        "hardware",
        "information",
        "inventory",
        "knowledge",
        "luggage",
        "metadata",
        "news",
        "personnel",
        "research",
        "software",
        "staff",
        "traffic",
    }
)
"""Nouns with no plural of their own: "equipment", never "equipments"."""

IRREGULAR = {
    "analysis": "analyses",
    "child": "children",
    "crisis": "crises",
    "criterion": "criteria",
    "foot": "feet",
    "goose": "geese",
    "half": "halves",
    "knife": "knives",
    "leaf": "leaves",
    "life": "lives",
    "man": "men",
    "mouse": "mice",
    "person": "people",
    "phenomenon": "phenomena",
    "quiz": "quizzes",
    "shelf": "shelves",
    "thief": "thieves",
    "tooth": "teeth",
    "wife": "wives",
    "wolf": "wolves",
    "woman": "women",
    "echo": "echoes",
    "hero": "heroes",
    "potato": "potatoes",
    "tomato": "tomatoes",
    "alias": "aliases",
    "atlas": "atlases",
    "canvas": "canvases",
    "gas": "gases",
    "axis": "axes",
    "menu": "menus",
    "guru": "gurus",
    "taxi": "taxis",
    "ski": "skis",
}
"""Plurals no rule gives (person -> people, child -> children)."""

ROW_WORDS = {"data": "record", "metadata": "record", "personnel": "member", "staff": "member"}
"""The word a row of a table named by an uncountable noun adds ("staff member"); others add "item"."""

PIECES = frozenset({"baggage", "equipment", "furniture", "luggage"})
"""Uncountable nouns whose one row is a "piece of" them."""

_TAIL = re.compile(r" (?:on|of|in|per|for|at|with|to|from) ")  # the words after a noun's head: "song on a playlist"
_VOWELS = frozenset("aeiou")


def words(name: str) -> str:
    """An identifier in words: ``unit_price`` -> "unit price" (words stay as they are)."""
    return " ".join(part for part in re.split(r"[_\s]+", name) if part)


def plural(noun: str) -> str:
    """The English plural of a noun or noun phrase.

    The head takes the plural: "gift card" -> "gift cards", "song on a playlist" ->
    "songs on a playlist". Irregular nouns (person -> people, child -> children) and
    uncountable ones (equipment, inventory, information, staff, data) are known; otherwise
    a consonant and -y give -ies (category -> categories), -s, -x, -z, -ch and -sh give -es
    (status -> statuses, address -> addresses), -sis gives -ses (basis -> bases), and a word
    already plural (settings, categories) stays as it is.
    """
    head = _TAIL.split(noun, maxsplit=1)[0]
    if head != noun:
        return plural(head) + noun[len(head) :]
    before, _, last = noun.rpartition(" ")
    if not last:
        return noun
    return (before + " " if before else "") + _match_case(last, _plural_word(last.lower()))


def _plural_word(word: str) -> str:
    """The plural of one lower-case word."""
    if word in UNCOUNTABLE or not word[-1:].isalpha():
        return word
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word in IRREGULAR.values():
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS:
        return word[:-1] + "ies"
    if word.endswith(("ss", "us", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("sis"):
        return word[:-2] + "es"
    if word.endswith("s"):
        return word  # already plural: "settings", "news"
    return word + "s"


def _match_case(original: str, word: str) -> str:
    """``word`` written in the case of ``original`` (all capitals, a capital first letter, or as it is)."""
    if original.isupper() and len(original) > 1:
        return word.upper()
    if original[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def row_noun(table: str) -> str:
    """The noun for one row of a table without ``called``: its name in words, or a countable
    noun for an uncountable one (``inventory`` -> "inventory item", ``staff`` -> "staff member")."""
    phrase = words(table)
    head = _TAIL.split(phrase, maxsplit=1)[0]
    last = head.rpartition(" ")[2]
    if last.lower() not in UNCOUNTABLE:
        return phrase
    if last.lower() in PIECES:
        return "piece of " + phrase  # "gym equipment" -> "piece of gym equipment"
    return f"{phrase} {ROW_WORDS.get(last.lower(), 'item')}"  # "inventory item", "support staff member"
