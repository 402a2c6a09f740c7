"""Episodic indexes over the message log: BM25 (lexical) and dense vectors.

Both are per-participant in-memory structures derived from committed rows and synced
lazily before each query: new messages are appended, and any deletion (which bumps the
participant's `index_epoch` in its own transaction) makes the next query rebuild. So an
index can never show a message the log no longer has, whichever process wrote it.
Every query takes `as_of` and scores only messages with ordinal < as_of; BM25's corpus
statistics (document count, document frequencies, average length) are taken as of that
bound too, so not even a later message's words leak into a score.

Dense vectors are persisted in `message_vectors` (sqlite-vec) in the same transaction as
their message; BM25 is rebuilt from text on start (fast) and needs no table of its own.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from memory import embeddings
from memory.tokens import tokenize

K1, B = 1.5, 0.75


class _Grow:
    """An append-only numpy buffer (capacity doubles), for rows added a few at a time."""

    def __init__(self, dtype, width: int | None = None, size: int = 64):
        shape = (size,) if width is None else (size, width)
        self.buf = np.zeros(shape, dtype=dtype)
        self.n = 0

    def extend(self, rows) -> None:
        rows = np.asarray(rows, dtype=self.buf.dtype)
        need = self.n + len(rows)
        if need > len(self.buf):
            cap = max(need, 2 * len(self.buf))
            new = np.zeros((cap, *self.buf.shape[1:]), dtype=self.buf.dtype)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
        self.buf[self.n : need] = rows
        self.n = need

    @property
    def view(self) -> np.ndarray:
        return self.buf[: self.n]


class _ParticipantIndex:
    def __init__(self):
        self.lock = threading.Lock()
        self.epoch = -1
        self.next_ordinal = 1
        self.ordinals = _Grow(np.int64)

    def reset(self, epoch: int) -> None:
        self.__init__()
        self.epoch = epoch

    def add(self, rows) -> None:  # rows: sqlite Rows with id, ordinal, text
        raise NotImplementedError


class _Index:
    """Sync logic shared by both indexes: per participant, bring the cache up to the log."""

    def __init__(self, store):
        self.store = store
        self._parts: dict[str, _ParticipantIndex] = {}
        self._lock = threading.Lock()

    def _new(self) -> _ParticipantIndex:
        raise NotImplementedError

    def synced(self, participant: str) -> _ParticipantIndex:
        idx = self._parts.get(participant)
        if idx is None:
            with self._lock:
                idx = self._parts.setdefault(participant, self._new())
        conn = self.store.conn
        p = conn.execute(
            "SELECT next_ordinal, index_epoch FROM participants WHERE participant=?", (participant,)
        ).fetchone()
        with idx.lock:
            if p is None:
                idx.reset(-1)
                return idx
            if p["index_epoch"] != idx.epoch:
                idx.reset(p["index_epoch"])
            if p["next_ordinal"] > idx.next_ordinal:
                rows = conn.execute(
                    "SELECT id, ordinal, text FROM messages WHERE participant=? AND ordinal>=? ORDER BY ordinal",
                    (participant, idx.next_ordinal),
                ).fetchall()
                if rows:
                    idx.add(rows)
                    idx.ordinals.extend([r["ordinal"] for r in rows])
                    idx.next_ordinal = rows[-1]["ordinal"] + 1
        return idx

    def forget(self, participant: str) -> None:
        with self._lock:
            self._parts.pop(participant, None)


def _mask(ordinals: np.ndarray, n: int, exclude) -> np.ndarray | None:
    if not exclude:
        return None
    ex = np.fromiter(exclude, dtype=np.int64)
    pos = np.searchsorted(ordinals[:n], ex)
    ok = (pos < n) & (ordinals[np.minimum(pos, max(n - 1, 0))] == ex)
    return pos[ok]


# ---------------------------------------------------------------- BM25


class _Lexical(_ParticipantIndex):
    def __init__(self):
        super().__init__()
        self.doc_len = _Grow(np.float64)
        self.cum_len = _Grow(np.float64)
        self.cum_len.extend([0.0])
        # term -> (positions, term frequencies), appended in place: a new message extends the
        # arrays of its terms instead of making the next query rebuild them (in the live turn
        # the query is the message just stored, so every one of its terms would be rebuilt).
        self.postings: dict[str, tuple[_Grow, _Grow]] = {}

    def add(self, rows) -> None:
        start = self.ordinals.n
        lens = []
        new: dict[str, tuple[list[int], list[int]]] = {}
        for i, r in enumerate(rows):
            toks = tokenize(r["text"])
            lens.append(len(toks))
            counts: dict[str, int] = {}
            for t in toks:
                counts[t] = counts.get(t, 0) + 1
            for t, c in counts.items():
                docs, tfs = new.get(t) or new.setdefault(t, ([], []))
                docs.append(start + i)
                tfs.append(c)
        for t, (docs, tfs) in new.items():
            grown = self.postings.get(t)
            if grown is None:
                grown = self.postings[t] = (_Grow(np.int64, size=len(docs)), _Grow(np.float64, size=len(docs)))
            grown[0].extend(docs)
            grown[1].extend(tfs)
        self.doc_len.extend(lens)
        total = self.cum_len.view[-1]
        self.cum_len.extend(total + np.cumsum(lens, dtype=np.float64))

    def arrays(self, term: str):
        p = self.postings.get(term)
        if p is None:
            return _NO_DOCS, _NO_TFS
        return p[0].view, p[1].view


_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_TFS = np.zeros(0, dtype=np.float64)


class LexicalIndex(_Index):
    """BM25 (k1=1.5, b=0.75, Lucene's non-negative idf) with corpus statistics as of the bound."""

    def _new(self):
        return _Lexical()

    def scores(self, participant: str, query: str, as_of: int, exclude=()) -> tuple[np.ndarray, np.ndarray, float]:
        """Scores of every message before as_of, their ordinals, and the query's reference score.

        The reference is the sum of the query terms' idf: what a message mentioning every
        term once, at average length, would score. Gates divide by it so one threshold
        means the same for short and long queries.
        """
        idx: _Lexical = self.synced(participant)  # type: ignore[assignment]
        with idx.lock:
            ordinals = idx.ordinals.view
            n = int(np.searchsorted(ordinals, as_of))
            scores = np.zeros(n)
            best = 0.0
            if n == 0:
                return scores, ordinals[:0].copy(), best
            avgdl = max(idx.cum_len.view[n] / n, 1e-9)
            dl = idx.doc_len.view
            for term in tokenize(query):
                docs, tfs = idx.arrays(term)
                c = int(np.searchsorted(docs, n))
                df = c
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                best += idf  # one mention in an average-length message scores exactly idf
                if c == 0:
                    continue
                d, f = docs[:c], tfs[:c]
                scores[d] += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * dl[d] / avgdl))
            masked = _mask(ordinals, n, exclude)
            if masked is not None:
                scores[masked] = 0.0
            return scores, ordinals[:n].copy(), best


# ---------------------------------------------------------------- dense


class _Dense(_ParticipantIndex):
    def __init__(self, fetch=None):
        super().__init__()
        self.vectors = _Grow(np.float32, embeddings.DIM)
        self.fetch = fetch

    def reset(self, epoch):
        fetch = self.fetch
        super().reset(epoch)
        self.fetch = fetch

    def add(self, rows) -> None:
        self.vectors.extend(self.fetch(rows))


class VectorIndex(_Index):
    """Dense similarity over all-MiniLM-L6-v2 vectors: a numpy scan of the participant's rows.

    At 30k vectors a brute-force dot product (about 1 ms) beats sqlite-vec's KNN (14-25 ms), so
    sqlite-vec holds the vectors and numpy answers the queries.
    """

    def __init__(self, store, embedder: embeddings.Embedder | None = None):
        super().__init__(store)
        self.embedder = embedder or embeddings.default()

    def _new(self):
        return _Dense(self._fetch)

    def _fetch(self, rows) -> np.ndarray:
        out = np.zeros((len(rows), embeddings.DIM), dtype=np.float32)
        missing = []
        for i, r in enumerate(rows):
            got = self.store.conn.execute(
                "SELECT embedding FROM message_vectors WHERE rowid=?", (r["id"],)
            ).fetchone()
            if got is None:
                missing.append(i)
            else:
                out[i] = np.frombuffer(got[0], dtype=np.float32)
        if missing:  # written before vectors existed: embed now (the scan must see every message)
            out[missing] = self.embedder.encode([rows[i]["text"] for i in missing])
        return out

    # write side: called by messages.append/delete inside their transaction
    def prepare(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def insert(self, conn, msgs, prepared: np.ndarray) -> None:
        conn.executemany(
            "INSERT INTO message_vectors(rowid, participant, ordinal, embedding) VALUES (?,?,?,?)",
            [(m.id, m.participant, m.ordinal, v.astype(np.float32).tobytes()) for m, v in zip(msgs, prepared)],
        )

    def delete(self, conn, ids: list[int]) -> None:
        conn.executemany("DELETE FROM message_vectors WHERE rowid=?", [(i,) for i in ids])

    def similarities(self, participant: str, query_vec: np.ndarray, as_of: int, exclude=()):
        idx: _Dense = self.synced(participant)  # type: ignore[assignment]
        with idx.lock:
            ordinals = idx.ordinals.view
            n = int(np.searchsorted(ordinals, as_of))
            sims = idx.vectors.view[:n] @ query_vec.astype(np.float32)
            masked = _mask(ordinals, n, exclude)
            if masked is not None:
                sims[masked] = -np.inf
            return sims, ordinals[:n].copy()
