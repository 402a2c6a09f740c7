"""The one tokenizer of lexical search (the BM25 index and its rank-bm25 reference share it)."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have he her
    hers him his how i if in into is it its just me my no not of on or our ours she so than that
    the their them then there these they this those to too us was we were what when where which
    who whom why will with would you your yours am im i'm oh ok okay yeah""".split()
)


def tokenize(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOPWORDS]
