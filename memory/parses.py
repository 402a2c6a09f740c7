"""Each of a participant's messages parsed once, and the parse kept in the database.

The recall readers (memory.answers) parse the participant's statements that are candidates for a
question: the recent window, what retrieval found, the messages naming what is asked, the latest
200. The same statement is a candidate turn after turn, and in a long conversation most of them
are old: the parses memory.nlp keeps in memory (512) do not hold them, and a restart loses them,
so each turn parsed dozens of old statements again (5 ms each here; 52 % of a turn at 10,000
messages).

Inside a turn (`Reading`, set by companion.turn through `memory.nlp.source`) a parse that is not
kept in memory is read from `message_parses` (the spaCy Doc's bytes, ~3 kB a message;
`Doc.from_bytes` takes ~0.4 ms), and a text parsed afresh that is one of the participant's own
messages is stored after the reply (`Reading.store_later`: on the store's background thread,
committed before their next turn is read). A text whose parse this process keeps in memory already (the same words from another participant,
or from before a turn started reading) is not stored again for this one: it is parsed afresh after a
restart. A stored parse is the Doc a fresh parse gives
(tests/test_parses.py compares them attribute by attribute); it is keyed by the text's SHA-256 and
the pipeline (model name and version, spaCy version), so an edited text or another model is parsed
afresh. It goes with its message (a foreign key with ON DELETE CASCADE, and memory.messages.delete
deletes it explicitly) and with its participant (erasure deletes every table with a participant
column). A participant's download of their data counts these rows and says what they are.
"""

from __future__ import annotations

import hashlib
import logging
from functools import lru_cache

log = logging.getLogger(__name__)
TABLE = "message_parses"
NOTE = "one parse per message (its words' lemmas, parts of speech, dependencies, entities), derived from its text"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=4)
def model_key(pipe) -> str:
    import spacy

    return f"{pipe.meta.get('name')}-{pipe.meta.get('version')}/spacy-{spacy.__version__}"


class Reading:
    """One turn's parse source for memory.nlp: what the database holds of the participant's parses,
    and what the turn parsed afresh (to store after the reply)."""

    def __init__(self, store, participant: str):
        self.store, self.participant = store, participant
        self.fresh: dict[str, object] = {}
        self.pipe = None

    def find(self, pipe, texts: list[str]) -> dict:
        """text -> Doc for the texts whose parse by this pipeline is stored (fresh Docs)."""
        from spacy.tokens import Doc

        by_sha = {sha(t): t for t in texts}
        out: dict = {}
        keys = list(by_sha)
        for i in range(0, len(keys), 500):
            chunk = keys[i: i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.store.conn.execute(
                    f"SELECT sha, doc FROM {TABLE} WHERE participant=? AND model=? AND sha IN ({marks})",
                    (self.participant, model_key(pipe), *chunk)):
                t = by_sha[r[0]]
                if t not in out:
                    out[t] = Doc(pipe.vocab).from_bytes(bytes(r[1]))
        return out

    def made(self, pipe, docs: dict) -> None:
        """Parses made afresh in this turn (copies: the caller may change its own)."""
        self.pipe = pipe
        for t, d in docs.items():
            self.fresh.setdefault(t, d.copy())

    def store_later(self) -> None:
        """After the reply: store the fresh parses of texts that are the participant's messages."""
        if not self.fresh:
            return
        fresh, pipe, store, who = self.fresh, self.pipe, self.store, self.participant
        self.fresh = {}
        store.later(who, lambda: save(store, who, pipe, fresh))


def save(store, participant: str, pipe, docs: dict) -> int:
    """Store the parses of `docs` (text -> Doc) whose text is one of the participant's messages
    as it is stored now (one that is gone, or was never a message, is not stored); returns how many."""
    texts = list(docs)
    key = model_key(pipe)
    n = 0
    with store.transaction(participant=participant) as conn:
        for i in range(0, len(texts), 500):
            chunk = texts[i: i + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(f"SELECT id, text FROM messages WHERE participant=? AND sender='user' "
                                f"AND text IN ({marks})", (participant, *chunk)).fetchall()
            for mid, text in rows:
                n += conn.execute(
                    f"INSERT INTO {TABLE} (message_id, participant, sha, model, doc) VALUES (?,?,?,?,?) "
                    "ON CONFLICT (message_id, sha) DO NOTHING",
                    (mid, participant, sha(text), key, docs[text].to_bytes(exclude=["tensor", "user_data"]))).rowcount
    return n


def store_all(store, participant: str, batch: int = 256) -> int:
    """Parse and store every message of the participant's that has no stored parse (a history
    imported in bulk, which no turn parsed): what their turns would have stored. Returns how many."""
    from memory import facts, nlp

    pipe = nlp.nlp()
    rows = store.conn.execute(
        f"SELECT m.text FROM messages m WHERE m.participant=? AND m.sender='user' AND NOT EXISTS "
        f"(SELECT 1 FROM {TABLE} p WHERE p.message_id=m.id AND p.model=?) ORDER BY m.ordinal",
        (participant, model_key(pipe))).fetchall()
    n = 0
    for i in range(0, len(rows), batch):
        texts = list(dict.fromkeys(t for r in rows[i: i + batch] for t in (r[0], facts.blank_quotes(r[0]))))
        n += save(store, participant, pipe, dict(zip(texts, pipe.pipe(texts))))
    return n


def delete(conn, message_ids: list[int]) -> None:
    """Inside the caller's transaction: the parses of these messages (memory.messages.delete)."""
    conn.executemany(f"DELETE FROM {TABLE} WHERE message_id=?", [(i,) for i in message_ids])
