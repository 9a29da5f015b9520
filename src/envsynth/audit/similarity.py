"""Lexical similarity for the OOD audit: TF-IDF weighted bags of normalised words, compared by cosine.

Why lexical and not an embedding model: the audit must run offline, in CI and on machines that
reach only a package index, where a model's weights cannot be fetched at run time; it must give
the same number on every machine; and a user deciding what to hold out needs to see *why* two
domains match, which a bag of words shows (the shared terms, see :func:`shared_terms`) and an
embedding does not. The domain overlap it must catch is in the words themselves: tool names and
descriptions ("cancel_reservation", "checked baggage") are the vocabulary of a domain.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z]+")
STOPWORDS = frozenset(
    """a an and are as at be by can do for from get give has have i if in into is it its list me my of on one or our
    show that the their them then they this to up us we what when which who will with you your set new all any by""".split()  # noqa: SIM905
)
"""Words that carry no domain (and tool-verb prefixes such as get/list/show/set that every domain has)."""


def stem(word: str) -> str:
    """A light English stem: plurals, then -ing and -ed endings (booking, bookings, booked -> book; cancelled -> cancel)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    cut = word
    if len(word) > 5 and word.endswith("ing"):
        cut = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        cut = word[:-2]
    if cut != word and len(cut) > 3 and cut[-1] == cut[-2] and cut[-1] not in "aeious":
        cut = cut[:-1]  # shipp -> ship, cancell -> cancel
    return cut


def tokens(text: str) -> list[str]:
    """The normalised words of ``text``: camelCase and snake_case split, lower-cased, stop words dropped, stemmed.

    Words mixed with digits or inside e-mail addresses are dropped (ids, codes, addresses say nothing of a domain).
    """
    text = re.sub(r"\S*@\S*|\S*\d\S*", " ", text)
    words = (w.lower() for part in _CAMEL.sub(" ", text).split() for w in _WORD.findall(part))
    return [stem(w) for w in words if len(w) > 1 and w not in STOPWORDS]


Vector = dict[str, float]


class Vectoriser:
    """TF-IDF over a fixed set of documents: ``idf = ln((1 + N) / (1 + df)) + 1``, sublinear tf, unit length."""

    def __init__(self, documents: Iterable[Iterable[str]]) -> None:
        docs = [set(d) for d in documents]
        df: Counter[str] = Counter(t for d in docs for t in d)
        n = len(docs)
        self.idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
        self._default = math.log(1 + n) + 1.0

    def vector(self, words: Iterable[str]) -> Vector:
        """The unit TF-IDF vector of a bag of words (words unseen by the fitted documents get the largest idf)."""
        tf = Counter(words)
        v = {t: (1.0 + math.log(c)) * self.idf.get(t, self._default) for t, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {t: x / norm for t, x in v.items()} if norm else {}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Cosine similarity of two unit vectors (0 when either is empty)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b.get(t, 0.0) for t, x in a.items())


def shared_terms(a: Mapping[str, float], b: Mapping[str, float], top: int = 6) -> list[str]:
    """The terms that contribute most to ``cosine(a, b)``."""
    common = [(a[t] * b[t], t) for t in a.keys() & b.keys()]
    return [t for _, t in sorted(common, key=lambda x: (-x[0], x[1]))[:top]]
