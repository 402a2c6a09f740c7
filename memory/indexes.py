"""Episodic indexes over the message log: BM25 (lexical) and dense vectors.

Both are per-participant in-memory structures derived from committed rows and synced
lazily before each query: new messages are appended, and any deletion (which bumps the
participant's `index_epoch` in its own transaction) makes the next query rebuild. So an
index can never show a message the log no longer has, whichever process wrote it.
Every query takes `as_of` and scores only messages with ordinal < as_of; BM25's corpus
statistics (document count, document frequencies, average length) are taken as of that
bound too, so not even a later message's words leak into a score.

Dense vectors are persisted in `message_vectors` (sqlite-vec on SQLite, pgvector on PostgreSQL)
in the same transaction as their message; BM25 is rebuilt from text on start and needs no table
of its own. A cold load (BULK or more new ordinals: a restart, a deletion) reads a participant's
rows in bulk, with no Python object per message: BM25 one row of two aggregates (the ordinals as
text, the texts joined by SEP), tokenized in pieces and counted with numpy; the vector index the
ordinals the same way and the vectors as one array (`store.read_vectors`). The first index asked
starts the other's load on the store's loader thread (`_load_sibling`), so the first query after
a restart waits for the slower of the two loads rather than their sum. The vector buffer grows
by chunks, never by copying what it holds, so no turn pays for a copy of the whole matrix.
"""

from __future__ import annotations

import math
import re
import threading
import time

import numpy as np

from memory import embeddings
from memory.tokens import STOPWORDS, WORD, tokenize

K1, B = 1.5, 0.75
BULK = 256  # rows synced at once from which an index loads in bulk (one aggregate query, numpy)
SEP = "\x1f"  # joins the texts of a bulk read (not a word character: it ends a document's last token)
_WORD_OR_SEP = re.compile(WORD.pattern + "|" + SEP, WORD.flags)
CHUNK = 32_768  # characters a bulk load tokenizes between two hand-overs of the GIL (about 1 ms)


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

    @classmethod
    def of(cls, array: np.ndarray) -> "_Grow":
        """Wrap an existing array (no copy until the first extend)."""
        g = cls.__new__(cls)
        g.buf, g.n = array, len(array)
        return g


class _Chunks:
    """An append-only matrix kept as a list of blocks: a bulk load is one block as read, later
    rows go into fixed-size blocks. Appending never copies what is already held, so no single
    append costs more than allocating one block."""

    BLOCK = 4096

    def __init__(self, width: int, dtype=np.float32):
        self.width, self.dtype = width, dtype
        self.blocks: list[np.ndarray] = []
        self.fill: list[int] = []
        self.n = 0

    def extend(self, rows) -> None:
        rows = np.asarray(rows, dtype=self.dtype).reshape(-1, self.width)
        if len(rows) >= self.BLOCK and (not self.blocks or self.fill[-1] == len(self.blocks[-1])):
            self.blocks.append(rows)  # a bulk load: kept as it is
            self.fill.append(len(rows))
            self.n += len(rows)
            return
        i = 0
        while i < len(rows):
            if not self.blocks or self.fill[-1] == len(self.blocks[-1]):
                self.blocks.append(np.empty((self.BLOCK, self.width), dtype=self.dtype))
                self.fill.append(0)
            room = len(self.blocks[-1]) - self.fill[-1]
            take = rows[i: i + room]
            self.blocks[-1][self.fill[-1]: self.fill[-1] + len(take)] = take
            self.fill[-1] += len(take)
            i += len(take)
        self.n += len(rows)

    def dot(self, vec: np.ndarray, n: int) -> np.ndarray:
        """(first n rows) @ vec, block by block."""
        out = np.empty(n, dtype=np.float32)
        at = 0
        for block, fill in zip(self.blocks, self.fill):
            if at >= n:
                break
            k = min(fill, n - at)
            np.dot(block[:k], vec, out=out[at: at + k])
            at += k
        return out

    def row(self, i: int) -> np.ndarray:
        """Row i (a copy)."""
        at = 0
        for block, fill in zip(self.blocks, self.fill):
            if i < at + fill:
                return np.array(block[i - at])
            at += fill
        raise IndexError(i)

    @property
    def view(self) -> np.ndarray:
        """All rows as one array (a copy: for benchmarks and tests, not the query path)."""
        parts = [b[:f] for b, f in zip(self.blocks, self.fill)]
        return np.concatenate(parts) if parts else np.zeros((0, self.width), dtype=self.dtype)


class _ParticipantIndex:
    def __init__(self):
        self.lock = threading.Lock()
        self.epoch = -1
        self.next_ordinal = 1
        self.ordinals = _Grow(np.int64)

    def reset(self, epoch: int) -> None:
        """Empty, for a reload; called with `lock` held, which stays the same object (a new lock
        would let another thread into the load this one is doing)."""
        lock = self.lock
        self.__init__()
        self.lock = lock
        self.epoch = epoch

    def add(self, participant: str, rows, ordinals: np.ndarray) -> None:  # rows: (id, ordinal, text)
        raise NotImplementedError


class _Index:
    """Sync logic shared by both indexes: per participant, bring the cache up to the log."""

    COLUMNS = "id, ordinal, text"  # what a sync reads of each new message (add's rows)

    def __init__(self, store):
        self.store = store
        self._parts: dict[str, _ParticipantIndex] = {}
        self._lock = threading.Lock()

    def _new(self) -> _ParticipantIndex:
        raise NotImplementedError

    def synced(self, participant: str, sibling: bool = True) -> _ParticipantIndex:
        idx = self._parts.get(participant)
        if idx is None:
            with self._lock:
                idx = self._parts.setdefault(participant, self._new())
        conn = self.store.conn
        p = conn.execute(
            "SELECT next_ordinal, index_epoch FROM participants WHERE participant=?", (participant,)
        ).fetchone()
        if sibling and p is not None and not conn.in_transaction and \
                p["next_ordinal"] - (1 if p["index_epoch"] != idx.epoch else idx.next_ordinal) >= BULK:
            self._load_sibling(participant)
        with idx.lock:
            if p is None:
                idx.reset(-1)
                return idx
            if p["index_epoch"] != idx.epoch:
                idx.reset(p["index_epoch"])
            if p["next_ordinal"] - idx.next_ordinal >= BULK:  # a cold load (a restart, a deletion)
                ordinals, payload = self._read_bulk(conn, participant, idx.next_ordinal)
                if len(ordinals):
                    idx.add_bulk(participant, ordinals, payload)
                    idx.ordinals.extend(ordinals)
                    idx.next_ordinal = int(ordinals[-1]) + 1
            elif p["next_ordinal"] > idx.next_ordinal:
                rows = conn.execute(
                    f"SELECT {self.COLUMNS} FROM messages WHERE participant=? AND ordinal>=? ORDER BY ordinal",
                    (participant, idx.next_ordinal),
                ).fetchall()
                if rows:
                    ordinals = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
                    idx.add(participant, rows, ordinals)
                    idx.ordinals.extend(ordinals)
                    idx.next_ordinal = int(ordinals[-1]) + 1
        return idx

    BULK_TEXT = False  # whether a bulk read brings the texts

    def _read_bulk(self, conn, participant: str, from_ordinal: int):
        """(ordinals, texts joined by SEP or None) of the participant's messages from `from_ordinal`
        on, in ordinal order, as one row of aggregates: no Python object per message. A SEP inside
        a text is read as a space (neither is a word character, so the tokens are the same)."""
        if self.BULK_TEXT:
            r = conn.execute("SELECT string_agg(CAST(ordinal AS TEXT), ',' ORDER BY ordinal), "
                             "string_agg(replace(text, ?, ' '), ? ORDER BY ordinal) "
                             "FROM messages WHERE participant=? AND ordinal>=?",
                             (SEP, SEP, participant, from_ordinal)).fetchone()
        else:
            r = conn.execute("SELECT string_agg(CAST(ordinal AS TEXT), ',' ORDER BY ordinal) "
                             "FROM messages WHERE participant=? AND ordinal>=?", (participant, from_ordinal)).fetchone()
        if r is None or r[0] is None:
            return np.zeros(0, dtype=np.int64), None
        ordinals = np.fromstring(r[0], dtype=np.int64, sep=",")
        return ordinals, (r[1] if self.BULK_TEXT else None)

    def _load_sibling(self, participant: str) -> None:
        """A cold load (a restart, a deletion): the store's other index loads the same participant
        at the same time, on the store's loader thread (its reads wait on the database with the GIL
        released while this one tokenizes), so the first query waits for the slower of the two
        loads, not their sum. Only outside a transaction (the loader's connection could not see
        the caller's uncommitted rows); a load there that would have to embed a missing vector
        gives up and leaves it to the caller's own sync (no embedder is called from two threads)."""
        other = next((ix for ix in (getattr(self.store, "bm25", None), getattr(self.store, "vectors", None))
                      if isinstance(ix, _Index) and ix is not self), None)
        if other is not None:
            self.store.load_soon(lambda: other.synced(participant, sibling=False))

    def forget(self, participant: str) -> None:
        """Drop the participant's index (an erasure); a load of it in progress on another thread
        (the loader's) is waited for, so nothing it read outlives this call in the index."""
        with self._lock:
            idx = self._parts.pop(participant, None)
        if idx is not None:
            with idx.lock:
                pass


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

    def add(self, participant: str, rows, ordinals: np.ndarray) -> None:
        if len(rows) >= BULK:
            return self._add_bulk([r[2] for r in rows])
        start = self.ordinals.n
        lens = []
        new: dict[str, tuple[list[int], list[int]]] = {}
        for i, r in enumerate(rows):
            toks = tokenize(r[2])
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
        self._lengths(lens)

    def _lengths(self, lens) -> None:
        self.doc_len.extend(lens)
        total = self.cum_len.view[-1]
        self.cum_len.extend(total + np.cumsum(lens, dtype=np.float64))

    def add_bulk(self, participant: str, ordinals: np.ndarray, joined: str) -> None:
        self._add_joined(joined, len(ordinals))

    def _add_bulk(self, texts: list[str]) -> None:
        self._add_joined(SEP.join(t.replace(SEP, " ") for t in texts), len(texts))

    def _add_joined(self, joined: str, n_docs: int) -> None:
        """The same postings as `add`, built with numpy from all texts at once (a cold load): the
        texts come joined by SEP, lowered and tokenized by the regex (SEP is a token of its own
        that ends each document), tokens numbered through one dict in order of first occurrence,
        (term, doc) pairs counted by one np.unique. The text is tokenized in pieces of about
        CHUNK characters (cut at a SEP, so no token is cut), the GIL handed over between pieces:
        the other index loads beside this one (`_load_sibling`) and on PostgreSQL its vector read
        needs the GIL once per row, which one long regex call would keep from it."""
        start = self.ordinals.n
        low = joined.lower()
        vocab: dict[str, int] = {}
        parts = []
        at = 0
        while at < len(low):
            end = low.find(SEP, at + CHUNK) if at + CHUNK < len(low) else -1
            end = len(low) if end < 0 else end
            flat = _WORD_OR_SEP.findall(low, at, end)
            for t in dict.fromkeys(flat):
                if t not in vocab:
                    vocab[t] = len(vocab)
            parts.append(np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat)))
            at = end
            if at < len(low):
                time.sleep(0)  # let a waiting thread (the sibling load) take the GIL
        terms = list(vocab)
        ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        stop = np.fromiter((t in STOPWORDS for t in terms), dtype=bool, count=len(terms))
        sep = vocab.get(SEP)
        if sep is not None:
            is_sep = ids == sep
            doc = np.cumsum(is_sep)  # a token's document: how many separators came before it
            if int(doc[-1]) != n_docs - 1:
                raise ValueError(f"bulk texts: {int(doc[-1]) + 1} documents for {n_docs} ordinals")
            stop[sep] = True
        elif n_docs > 1:
            raise ValueError(f"bulk texts: 1 document for {n_docs} ordinals")
        else:
            doc = np.zeros(len(ids), dtype=np.int64)
        keep = ~stop[ids] if len(ids) else np.zeros(0, dtype=bool)
        ids, doc = ids[keep], doc[keep]
        self._lengths(np.bincount(doc, minlength=n_docs).astype(np.float64))
        if not len(ids):
            return
        pair, tf = np.unique(ids * n_docs + doc, return_counts=True)  # sorted by term, then doc
        term_of, doc_of = pair // n_docs, pair % n_docs + start
        cuts = np.flatnonzero(np.diff(term_of)) + 1
        bounds = np.concatenate(([0], cuts, [len(pair)]))
        tfs = tf.astype(np.float64)
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            term = terms[int(term_of[a])]
            grown = self.postings.get(term)
            if grown is None:
                self.postings[term] = (_Grow.of(doc_of[a:b]), _Grow.of(tfs[a:b]))
            else:
                grown[0].extend(doc_of[a:b])
                grown[1].extend(tfs[a:b])

    def arrays(self, term: str):
        p = self.postings.get(term)
        if p is None:
            return _NO_DOCS, _NO_TFS
        return p[0].view, p[1].view


_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_TFS = np.zeros(0, dtype=np.float64)


class LexicalIndex(_Index):
    """BM25 (k1=1.5, b=0.75, Lucene's non-negative idf) with corpus statistics as of the bound."""

    BULK_TEXT = True

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
        self.vectors = _Chunks(embeddings.DIM)
        self.fetch = fetch

    def reset(self, epoch):
        fetch = self.fetch
        super().reset(epoch)
        self.fetch = fetch

    def add(self, participant: str, rows, ordinals: np.ndarray) -> None:  # rows: (id, ordinal)
        self.vectors.extend(self.fetch(participant, rows, ordinals))

    def add_bulk(self, participant: str, ordinals: np.ndarray, _texts=None) -> None:
        self.vectors.extend(self.fetch(participant, None, ordinals))


class _LeftToCaller(Exception):
    """A sibling load that stops short (the index stays as it was; its next sync loads it)."""


class VectorIndex(_Index):
    """Dense similarity over all-MiniLM-L6-v2 vectors: a numpy scan of the participant's rows.

    At 30k vectors a brute-force dot product (about 1 ms) beats sqlite-vec's KNN (14-25 ms), so
    the database holds the vectors and numpy answers the queries (exactly, as of any bound).
    """

    COLUMNS = "id, ordinal"  # the vectors come from message_vectors; a text only for a missing one

    def __init__(self, store, embedder: embeddings.Embedder | None = None):
        super().__init__(store)
        self.embedder = embedder or embeddings.default()
        self._embeds = threading.local()  # .ok False: this thread's load must not embed (a sibling load)

    def synced(self, participant: str, sibling: bool = True) -> _ParticipantIndex:
        if sibling:
            return super().synced(participant)
        self._embeds.ok = False
        try:
            return super().synced(participant, sibling=False)
        finally:
            self._embeds.ok = True

    def _new(self):
        return _Dense(self._fetch)

    def _fetch(self, participant: str, rows, ordinals: np.ndarray) -> np.ndarray:
        """The rows' vectors, read in one query; a message stored without one (written before
        vectors existed, or whose reply vector a crash cut off, see `complete`) is embedded now
        and its vector stored. `rows` None (a bulk load): the ordinals only, the ids are read if
        a vector is missing."""
        ids = None if rows is None else [r[0] for r in rows]
        got_ord, got_vec = self.store.read_vectors(participant, int(ordinals[0]), ids=ids)
        if len(got_ord) == len(ordinals) and np.array_equal(got_ord, ordinals):
            return got_vec  # every row has its vector (a cold load): the array as read, no copy
        if not getattr(self._embeds, "ok", True):
            raise _LeftToCaller("a vector is missing: the caller's own sync embeds it")
        if rows is None:  # (id, ordinal) of each ordinal; one deleted since has id None (left at 0)
            id_of = dict(self.store.conn.execute(
                "SELECT ordinal, id FROM messages WHERE participant=? AND ordinal>=? AND ordinal<=?",
                (participant, int(ordinals[0]), int(ordinals[-1]))).fetchall())
            rows = [(id_of.get(o), o) for o in ordinals.tolist()]
        out = np.zeros((len(rows), embeddings.DIM), dtype=np.float32)
        pos = np.searchsorted(ordinals, got_ord)
        ok = (pos < len(ordinals)) & (ordinals[np.minimum(pos, len(ordinals) - 1)] == got_ord)
        out[pos[ok]] = got_vec[ok]
        have = np.zeros(len(rows), dtype=bool)
        have[pos[ok]] = True
        missing = np.flatnonzero(~have).tolist()
        if missing:  # the scan must see every message
            missing = [i for i in missing if rows[i][0] is not None]
            texts = self._texts([rows[i][0] for i in missing])
            have_text = [i for i in missing if rows[i][0] in texts]  # a message deleted since: left at 0
            if have_text:
                found = [(rows[i][0], rows[i][1], texts[rows[i][0]]) for i in have_text]
                out[have_text] = self.embedder.encode([r[2] for r in found])
                self._store_missing(participant, found, out[have_text])
        return out

    def _texts(self, ids: list[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i: i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.store.conn.execute(f"SELECT id, text FROM messages WHERE id IN ({marks})", tuple(chunk)):
                out[r[0]] = r[1]
        return out

    def complete(self, participant: str, msgs) -> None:
        """Embed and store the vectors of messages stored without them (`index_later`), unless
        they are gone (deleted, erased) or another process stored them meanwhile."""
        rows = [(m.id, m.ordinal, m.text) for m in msgs]
        self._store_missing(participant, rows, self.prepare([r[2] for r in rows]), quiet=False)

    def _store_missing(self, participant: str, rows, vecs, quiet: bool = True) -> None:
        import contextlib

        with contextlib.suppress(*((Exception,) if quiet else ())):  # a read must not fail on a repair
            with self.store.transaction(participant=participant) as conn:
                for r, v in zip(rows, vecs):
                    if conn.execute("SELECT 1 FROM messages WHERE id=?", (r[0],)).fetchone() and \
                            not conn.execute("SELECT 1 FROM message_vectors WHERE rowid=?", (r[0],)).fetchone():
                        conn.execute("INSERT INTO message_vectors(rowid, participant, ordinal, embedding) "
                                     "VALUES (?,?,?,?)", (r[0], participant, r[1], self.store.vector_value(v)))

    # write side: called by messages.append/delete inside their transaction
    def prepare(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def insert(self, conn, msgs, prepared: np.ndarray) -> None:
        value = self.store.vector_value
        conn.executemany(
            "INSERT INTO message_vectors(rowid, participant, ordinal, embedding) VALUES (?,?,?,?)",
            [(m.id, m.participant, m.ordinal, value(v)) for m, v in zip(msgs, prepared)],
        )

    def delete(self, conn, ids: list[int]) -> None:
        conn.executemany("DELETE FROM message_vectors WHERE rowid=?", [(i,) for i in ids])

    def stored(self, participant: str, ordinals) -> dict[int, np.ndarray]:
        """The vectors the index holds for these of the participant's messages, by ordinal (copies;
        an ordinal it does not hold is left out)."""
        idx: _Dense = self.synced(participant)  # type: ignore[assignment]
        with idx.lock:
            have = idx.ordinals.view
            want = np.fromiter(ordinals, dtype=np.int64)
            pos = np.searchsorted(have, want)
            ok = (pos < len(have)) & (have[np.minimum(pos, max(len(have) - 1, 0))] == want) if len(have) else \
                np.zeros(len(want), dtype=bool)
            return {int(o): idx.vectors.row(int(i)) for o, i in zip(want[ok], pos[ok])}

    def similarities(self, participant: str, query_vec: np.ndarray, as_of: int, exclude=()):
        idx: _Dense = self.synced(participant)  # type: ignore[assignment]
        with idx.lock:
            ordinals = idx.ordinals.view
            n = int(np.searchsorted(ordinals, as_of))
            sims = idx.vectors.dot(np.asarray(query_vec, dtype=np.float32), n)
            masked = _mask(ordinals, n, exclude)
            if masked is not None:
                sims[masked] = -np.inf
            return sims, ordinals[:n].copy()
