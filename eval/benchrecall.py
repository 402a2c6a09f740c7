"""`companion bench recall`: ingest rate and decision-path latency at scale, against a floor.

A synthetic participant (a varied, seeded conversation: templated sentences over names,
places, activities, foods and work topics, alternating user/companion, about a hundred
messages a day) is ingested through `messages.append_many` (embedding and vector writes
included) in batches. Then, for each of N distinct query texts that are not in the log:

- the decision path, as the live turn runs it minus generation: a fresh bound and recent
  window, a fresh TurnContext, the default gate's decide, the default retriever's search(k=10)
  (both from companion/settings.py, with their default params) and the `earlier_turns`
  policy's apply, all built through the registry;
- the floor, on the same query: one query embedding + a numpy brute-force top-10 over the
  same vector matrix + one BM25 query (`store.bm25.scores`) and its top-10.

The embedder's cache is emptied before each side, so each embeds the query once, uncached;
which side runs first alternates from query to query. Last, our BM25 against rank-bm25's
BM25Okapi over the same texts with the same tokenizer: time per query and top-10 agreement.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import click
import numpy as np

# ---------------------------------------------------------------- the synthetic participant

FIRST = """Ana Ben Carla Dmitri Elena Farid Greta Hugo Ines Jonas Kofi Lena Marco Nadia Omar
Priya Quentin Rosa Sven Tomas Uma Viktor Wen Xavier Yara Zoe Amir Bea Caleb Dora Emil Fatima
Gus Hana Ivan Jade Kai Lucia Mateo Noor Olga Pablo Rhea Sami Tara Ulla Vera Will Yusuf Zara
Aiko Bruno Chloe Diego Esme Felix Gia Henrik Isla Joao""".split()
RELATIONS = """sister brother mum dad cousin friend colleague boss neighbour partner aunt uncle
grandma grandpa roommate flatmate mentor niece nephew""".split()
PLACES = """Porto Lisbon Berlin Kyoto Oslo Lyon Naples Krakow Seville Dublin Ghent Utrecht
Bergen Tallinn Marseille Valencia Leipzig Bologna Granada Zurich Vienna Prague Budapest
Edinburgh Cork Malmo Aarhus Trieste Bilbao Hamburg""".split() + [
    "the canal", "the old harbour", "the botanical garden", "the climbing gym", "the library",
    "the farmers market", "the lake", "the office", "the allotment", "the coast", "the hills",
    "the night market", "the community centre", "the river path", "the pool",
]
ACTIVITIES = [
    "running", "bouldering", "baking sourdough", "watercolour painting", "learning Spanish",
    "playing chess", "wild swimming", "pottery", "cycling", "birdwatching", "knitting",
    "learning the guitar", "yoga", "hiking", "rowing", "salsa dancing", "gardening",
    "photography", "woodworking", "journaling", "tennis", "volunteering at the food bank",
    "learning Japanese", "board game nights", "meditation", "kayaking", "trail running",
    "brewing kombucha", "calligraphy", "choir practice", "fixing up my old bike", "sketching",
]
FOODS = [
    "ramen", "lentil soup", "tacos", "a mushroom risotto", "pad thai", "shakshuka", "dumplings",
    "a lemon tart", "banana bread", "paella", "a green curry", "pierogi", "falafel", "gnocchi",
    "a chickpea stew", "sushi", "pancakes", "moussaka", "bibimbap", "a plum crumble",
]
WORK = [
    "quarterly report", "product launch", "budget review", "client pitch", "hiring round",
    "database migration", "team offsite", "annual audit", "grant application", "website redesign",
    "conference talk", "onboarding plan", "sales forecast", "security review", "vendor contract",
    "roadmap", "performance review", "research proposal", "board presentation", "customer survey",
]
PETS = ["cat", "dog", "rabbit", "parrot", "tortoise", "hamster", "puppy", "kitten"]
PET_NAMES = "Miso Pepper Biscuit Luna Mochi Olive Ziggy Noodle Juniper Pickles Tofu Basil".split()
FEELINGS = """tired excited anxious proud relieved nervous hopeful frustrated calm overwhelmed
happy restless grateful lonely curious stressed content homesick""".split()
QUALITY = """great lovely strange wonderful disappointing fantastic odd brilliant rough
surprising delicious messy perfect chaotic beautiful exhausting""".split()
WHEN = [
    "this morning", "yesterday", "last weekend", "on Friday", "last night", "on Sunday",
    "earlier today", "after work", "over lunch", "on Tuesday evening", "two days ago",
]
EVENTS = [
    "job interview", "dentist appointment", "wedding", "exam", "half marathon", "move",
    "family dinner", "concert", "first date", "doctor's appointment", "birthday party", "flight",
]
BOOKS = [
    "The Overstory", "Middlemarch", "a book about octopuses", "Piranesi", "a history of Venice",
    "Braiding Sweetgrass", "a thriller set in Iceland", "Stoner", "a cookbook from Oaxaca",
    "The Dispossessed", "a biography of Ada Lovelace", "Klara and the Sun",
]
OBJECTS = ["favourite mug", "plant pot", "laptop charger", "glass of water", "houseplant", "lamp"]
TOPICS = ["memory", "friendship", "forests", "grief", "cities", "the sea", "work", "time"]

USER = [
    "I went {activity} with my {relation} {name} near {place} {when}.",
    "My {relation} {name} is thinking about moving to {place} for a new job.",
    "{name} says the {work} is slipping again and I feel {feeling} about it.",
    "Cooked {food} tonight and honestly it turned out {quality}.",
    "Still reading {book}, the part about {topic} is {quality}.",
    "Do you think I should sign up for {activity} classes at {place}?",
    "{pet_name} the {pet} knocked over my {object} {when}.",
    "Had a long call with {name} about the {work}, it went on for ages.",
    "I'm feeling {feeling} about the {event} next week.",
    "We finally booked the trip to {place}, {name} is coming too!",
    "The {work} deadline moved up, so I'll be working late most of this week.",
    "Spent the afternoon {activity} and lost track of time completely.",
    "My {relation} {name} made {food} for everyone {when}, it was {quality}.",
    "I can't stop thinking about what {name} said {when}.",
    "Took {pet_name} to the vet {when}, the {pet} is fine, just a bit {feeling}.",
    "Tried a new place in {place} that does {food}, pretty {quality}.",
    "I keep putting off the {work} and it's making me {feeling}.",
    "{name} and I argued about the {work} and I still feel {feeling}.",
    "Going {activity} at {place} always makes me feel {feeling} in a good way.",
    "Remember my {relation} {name}? They just got back from {place}.",
    "The {event} went {quality}, thanks for listening to me worry about it.",
    "I want to get back into {activity} but I never find the time.",
    "Honestly today was {quality}, the {work} meeting ran over and I skipped lunch.",
    "Found an old photo of me and {name} in {place}, feeling a bit {feeling}.",
    "Thinking of getting a {pet}, {name} says I should call it {pet_name}.",
]
COMPANION = [
    "That sounds {quality}! How did {name} find {place}?",
    "{activity} near {place} sounds like a good way to spend {when}. Was it busy?",
    "I hope the {work} comes together. Is {name} still helping with it?",
    "It makes sense to feel {feeling} before the {event}. Is there anything that would help?",
    "{food} is a good choice after {activity}. Did you follow a recipe?",
    "Moving to {place} is a big step. How do you feel about your {relation} {name} being further away?",
    "Poor {pet_name}! Is the {pet} settling down again after {when}?",
    "What is it about {book} that keeps you reading? Is it the {topic} part?",
    "It sounds like the {work} is taking a lot out of you. Are you still finding time for {activity}?",
    "I'd love to hear more about {place}. Did {name} like it as much as you did?",
    "That must have been {quality}. Do you want to talk about what {name} said {when}?",
    "Good for you for making time for {activity}. How long have you been going to {place}?",
    "A trip to {place} with {name} sounds {quality}. When do you leave?",
    "Feeling {feeling} after the {work} meeting is understandable. What would make this week easier?",
    "Working late on the {work} again is rough. Could {name} take some of it?",
    "I remember you mentioned {name} before. Are they the one who loves {food}?",
    "How is your {relation} {name} doing these days? Last time you sounded {feeling} about them.",
]
OPENERS = ["", "", "", "", "", "Oh, ", "Hmm, ", "So ", "Anyway, ", "Honestly ", "Well, ", "Ugh, ", "Okay so "]
CLOSERS = ["", "", "", "", "", " What do you think?", " Long day.", " Not sure why.", " Anyway.", " :)",
           " It was a lot.", " Just wanted to tell someone.", " More on that later.", " Weird, right?"]
SHORT = ["haha yes", "thanks, that helps", "ok, talk later", "good night!", "sounds right",
         "I guess so", "true", "exactly", "not sure yet", "maybe tomorrow"]
QUERY = [
    "Do you remember what {name} said about the {work}?",
    "Where was my {relation} thinking of moving, was it {place}?",
    "When did I last go {activity} with {name}?",
    "What was that place in {place} that does {food}?",
    "Remind me how the {event} went?",
    "What did I tell you about {pet_name} and the vet?",
    "Which book was I reading, the one about {topic}?",
    "Did I ever say whether {name} liked {place}?",
    "How was I feeling about the {work} a while ago?",
    "Have I mentioned {activity} classes at {place} before?",
    "What did my {relation} cook that time, was it {food}?",
    "Who was coming on the trip to {place} with me?",
    "what was the thing with my {object} and the {pet}",
    "did {name} ever get back from {place}",
    "I think I told you about {name} and the {work}, what did you say?",
]


def _zipf(rng: random.Random, items: list[str], s: float = 0.9) -> str:
    # Rank-weighted: a few names and places recur a lot, most are rare (as in a real life).
    weights = _zipf.cache.get((id(items), s))
    if weights is None:
        weights = _zipf.cache[(id(items), s)] = np.cumsum([1 / (i + 1) ** s for i in range(len(items))]).tolist()
    return rng.choices(items, cum_weights=weights)[0]


_zipf.cache = {}


def _fill(rng: random.Random, template: str, chatty: bool = False) -> str:
    slots = {
        "name": _zipf(rng, FIRST), "relation": _zipf(rng, RELATIONS), "place": _zipf(rng, PLACES),
        "activity": _zipf(rng, ACTIVITIES), "food": _zipf(rng, FOODS), "work": _zipf(rng, WORK),
        "pet": _zipf(rng, PETS), "pet_name": _zipf(rng, PET_NAMES), "feeling": rng.choice(FEELINGS),
        "quality": rng.choice(QUALITY), "when": rng.choice(WHEN), "event": _zipf(rng, EVENTS),
        "book": _zipf(rng, BOOKS), "object": rng.choice(OBJECTS), "topic": rng.choice(TOPICS),
    }
    text = template.format(**slots)
    text = text[0].upper() + text[1:]
    if chatty:
        opener = rng.choice(OPENERS)
        if opener:
            proper = template.startswith(("{name}", "{pet_name}", "{place}", "I ", "I'"))
            text = opener + (text if proper else text[0].lower() + text[1:])
        text += rng.choice(CLOSERS)
    return text


T0 = datetime(2025, 1, 6, 8, 0, tzinfo=timezone.utc)


def conversation(n: int, seed: int = 7) -> list[dict]:
    """n messages, alternating user/companion, about a hundred a day: rows for append_many."""
    rng = random.Random(f"conversation:{seed}")
    rows, ts = [], T0
    for i in range(n):
        sender = "user" if i % 2 == 0 else "companion"
        r = rng.random()
        if r < 0.06:
            template = text = rng.choice(SHORT)
        elif sender == "user":
            template = rng.choice(USER)
            text = _fill(rng, template, chatty=True)
            if r > 0.8:  # a longer message: two thoughts
                second = rng.choice(USER)
                template += second
                text += " " + _fill(rng, second)
        else:
            template = rng.choice(COMPANION)
            text = _fill(rng, template)
        if i and i % 100 == 0:  # next morning
            ts = ts.replace(hour=8, minute=0, second=0) + timedelta(days=1 + (rng.random() < 0.2))
        else:
            ts += timedelta(seconds=rng.randint(20, 400))
        rows.append(dict(sender=sender, text=text, context="work" if "{work}" in template else "personal", ts=ts))
    return rows


def queries(n: int, seed: int, exclude: set[str]) -> list[str]:
    """n distinct question texts, none of them a stored message (so no cache can know them)."""
    rng = random.Random(f"queries:{seed}")
    out: list[str] = []
    seen = set(exclude)
    while len(out) < n:
        q = _fill(rng, rng.choice(QUERY))
        if q not in seen:
            seen.add(q)
            out.append(q)
    return out


# ---------------------------------------------------------------- measurements


def _ms(seconds: list[float]) -> dict:
    a = np.asarray(seconds) * 1000
    return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3),
            "mean": round(float(a.mean()), 3), "n": len(a)}


def _loadavg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - platforms without it
        return []


def ingest(store, participant: str, rows: list[dict], batch_size: int, progress=None) -> dict:
    """append_many in batches; time the embedding (prepare) apart from the rest."""
    from memory import messages

    vectors = store.vectors
    prepare = vectors.prepare
    spent = {"embed": 0.0}

    def timed_prepare(texts):
        t = time.perf_counter()
        try:
            return prepare(texts)
        finally:
            spent["embed"] += time.perf_counter() - t

    vectors.prepare = timed_prepare
    try:
        started = time.perf_counter()
        for i in range(0, len(rows), batch_size):
            messages.append_many(store, participant, rows[i : i + batch_size])
            if progress:
                done = min(i + batch_size, len(rows))
                progress(f"ingest {done}/{len(rows)} ({done / (time.perf_counter() - started):.0f} msg/s)")
        total = time.perf_counter() - started
    finally:
        del vectors.prepare
    return {"messages": len(rows), "batch_size": batch_size, "seconds": round(total, 2),
            "rate_per_s": round(len(rows) / total, 1), "embed_seconds": round(spent["embed"], 2),
            "embed_share": round(spent["embed"] / total, 3),
            "embed_rate_per_s": round(len(rows) / spent["embed"], 1) if spent["embed"] else None}


def settings_default(kind: str) -> str:
    from companion.settings import Settings

    return Settings.model_fields[kind].default


def decision_path(store, participant: str, text: str, recent_window: int = 6, k: int = 10):
    """The live turn's decide + retrieve + apply, on a fresh context, without generation."""
    from memory import messages, registry
    from memory.context import TurnContext

    as_of = messages.next_ordinal(store, participant)
    ctx = TurnContext(store=store, participant=participant, text=text, context="personal", as_of=as_of,
                      recent=messages.read(store, participant, as_of, limit=recent_window))
    gate = registry.create("gate", settings_default("gate"))
    retriever = registry.create("retriever", settings_default("retriever"))
    policy = registry.create("policy", "earlier_turns")
    decision = gate.decide(ctx)
    hits = retriever.search(ctx, ctx.text, k)
    applied = policy.apply(ctx.recent, hits)
    return decision, hits, applied


def work_per_turn(store, participant: str, text: str) -> dict:
    """How many BM25 queries, dense scans and embeddings one decision path makes (1 each:
    the gate and the retriever share them through the turn's context)."""
    counts = {"bm25_queries": 0, "dense_scans": 0, "embeddings": 0}
    targets = [(store.bm25, "scores", "bm25_queries"), (store.vectors, "similarities", "dense_scans"),
               (store.vectors.embedder, "encode", "embeddings")]

    def counting(fn, key):
        def wrapped(*args, **kwargs):
            counts[key] += 1
            return fn(*args, **kwargs)
        return wrapped

    for obj, attr, key in targets:
        setattr(obj, attr, counting(getattr(obj, attr), key))
    try:
        store.vectors.embedder.clear_cache()
        decision_path(store, participant, text)
    finally:
        for obj, attr, _ in targets:
            delattr(obj, attr)
    return counts


def _top10(scores: np.ndarray) -> np.ndarray:
    if len(scores) <= 10:
        return np.argsort(-scores, kind="stable")
    top = np.argpartition(-scores, 9)[:10]
    return top[np.argsort(-scores[top], kind="stable")]


def floor(store, participant: str, text: str, matrix: np.ndarray, as_of: int) -> dict:
    """The least any decision path must do: embed once, scan the vectors, one BM25 query."""
    t0 = time.perf_counter()
    vec = store.vectors.embedder.encode_one(text)
    t1 = time.perf_counter()
    dense_top = _top10(matrix @ vec)
    t2 = time.perf_counter()
    scores, _, _ = store.bm25.scores(participant, text, as_of)
    bm25_top = _top10(scores)
    t3 = time.perf_counter()
    return {"total": t3 - t0, "embed": t1 - t0, "dense": t2 - t1, "bm25": t3 - t2,
            "dense_top": dense_top, "bm25_top": bm25_top}


def _ranked10(scores: np.ndarray) -> list[int]:
    """Top 10 with ties broken newer first (as the retrievers do), for comparing two rankings."""
    if len(scores) > 10:
        cut = np.partition(scores, len(scores) - 10)[len(scores) - 10]
        cand = np.flatnonzero(scores >= cut)
    else:
        cand = np.arange(len(scores))
    return cand[np.lexsort((-cand, -scores[cand]))][:10].tolist()


def bm25_versus_rank_bm25(store, participant: str, texts: list[str], sample: list[str], as_of: int) -> dict:
    """Our BM25 query against rank-bm25's BM25Okapi over the same texts, same tokenizer.

    Agreement is counted with ties broken the same way in both (newer first): the synthetic
    log repeats short messages, and an arbitrary tie-break would count ties as disagreement.
    Stock BM25Okapi's idf is log((N-df+0.5)/(df+0.5)) with a floor for common terms; ours is
    Lucene's log(1 + (N-df+0.5)/(df+0.5)), so also compared: BM25Okapi given our idf, which
    must rank exactly as we do.
    """
    import math

    from rank_bm25 import BM25Okapi

    from memory.tokens import tokenize

    class LuceneIdf(BM25Okapi):
        def _calc_idf(self, nd):
            for word, freq in nd.items():
                self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

    corpus = [tokenize(d) for d in texts]
    t = time.perf_counter()
    ref = BM25Okapi(corpus)
    build = time.perf_counter() - t
    same_idf = LuceneIdf(corpus)
    ours_t, ref_t = [], []
    agree = {"stock": [0, 0], "same_idf": [0, 0]}
    max_diff = 0.0
    for i, q in enumerate(sample):
        def run_ours():
            t = time.perf_counter()
            scores, _, _ = store.bm25.scores(participant, q, as_of)
            _top10(scores)
            return time.perf_counter() - t, scores

        def run_ref():
            t = time.perf_counter()
            scores = ref.get_scores(tokenize(q))
            _top10(scores)
            return time.perf_counter() - t, scores

        if i % 2:
            (dt_r, s_r), (dt_o, s_o) = run_ref(), run_ours()
        else:
            (dt_o, s_o), (dt_r, s_r) = run_ours(), run_ref()
        ours_t.append(dt_o)
        ref_t.append(dt_r)
        s_same = same_idf.get_scores(tokenize(q))
        max_diff = max(max_diff, float(np.abs(s_same - s_o).max()))
        mine = _ranked10(s_o)
        for key, theirs in (("stock", _ranked10(s_r)), ("same_idf", _ranked10(s_same))):
            agree[key][0] += set(mine) == set(theirs)
            agree[key][1] += mine == theirs
    ours, theirs = _ms(ours_t), _ms(ref_t)
    return {"documents": len(texts), "queries": len(sample), "rank_bm25_build_s": round(build, 2),
            "ours_ms": ours, "rank_bm25_ms": theirs,
            "speedup_p50": round(theirs["p50"] / ours["p50"], 1) if ours["p50"] else None,
            "same_top10_set": agree["stock"][0], "same_top10_order": agree["stock"][1],
            "same_idf_top10_set": agree["same_idf"][0], "same_idf_top10_order": agree["same_idf"][1],
            "same_idf_max_score_diff": max_diff}


def run(n_messages: int = 30000, n_queries: int = 200, seed: int = 7, data_dir: str | None = None,
        batch_size: int = 1024, bm25_sample: int = 100, warmup: int = 10, progress=None) -> dict:
    from memory import messages, participants
    from memory.store import Store

    load_start = _loadavg()
    tmp = None
    if data_dir is None:
        tmp = data_dir = tempfile.mkdtemp(prefix="companion-bench-")
    try:
        store = Store(Path(data_dir))
        participant = f"bench-s{seed}-n{n_messages}"
        k = 1
        while participants.exists(store, participant):
            k += 1
            participant = f"bench-s{seed}-n{n_messages}-{k}"
        participants.create(store, participant, tz="UTC")
        rows = conversation(n_messages, seed)
        texts = [r["text"] for r in rows]
        qs = queries(n_queries + warmup, seed, exclude=set(texts))
        embedder = store.vectors.embedder

        t = time.perf_counter()
        embedder.encode_one("load the model before the clock starts")
        model_load = time.perf_counter() - t
        ing = ingest(store, participant, rows, batch_size, progress)

        # First query after start: both indexes load from the database (BM25 from text).
        as_of = messages.next_ordinal(store, participant)
        t = time.perf_counter()
        store.bm25.synced(participant)
        bm25_load = time.perf_counter() - t
        t = time.perf_counter()
        matrix = store.vectors.synced(participant).vectors.view
        vectors_load = time.perf_counter() - t
        assert matrix.shape == (n_messages, 384)

        per_turn = work_per_turn(store, participant, "a text to count the work of one turn on")
        path_t, floor_t, parts, retrieved = [], [], {"embed": [], "dense": [], "bm25": []}, 0
        for i, q in enumerate(qs):
            def run_path():
                embedder.clear_cache()
                t = time.perf_counter()
                out = decision_path(store, participant, q)
                return time.perf_counter() - t, out

            def run_floor():
                embedder.clear_cache()
                return floor(store, participant, q, matrix, as_of)

            if i % 2:
                f = run_floor()
                p, (decision, hits, _) = run_path()
            else:
                p, (decision, hits, _) = run_path()
                f = run_floor()
            if i < warmup:
                continue
            if progress and (i - warmup) % 50 == 0:
                progress(f"queries {i - warmup}/{n_queries}")
            path_t.append(p)
            floor_t.append(f["total"])
            for key in parts:
                parts[key].append(f[key])
            retrieved += decision.retrieve
        embedder.clear_cache()

        path, flo = _ms(path_t), _ms(floor_t)
        if progress:
            progress("BM25 against rank-bm25")
        sample = qs[warmup : warmup + bm25_sample]
        bm25 = bm25_versus_rank_bm25(store, participant, texts, sample, as_of)
        store.close()
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return {
        "messages": n_messages, "queries": n_queries, "seed": seed,
        "load_average_start": load_start, "load_average_end": _loadavg(),
        "model_load_s": round(model_load, 2),
        "ingest": ing,
        "index_load_s": {"bm25": round(bm25_load, 2), "vectors": round(vectors_load, 2)},
        "path_ms": path, "floor_ms": flo,
        "floor_parts_p50_ms": {k: _ms(v)["p50"] for k, v in parts.items()},
        "ratio_p50": round(path["p50"] / flo["p50"], 3), "ratio_p95": round(path["p95"] / flo["p95"], 3),
        "gate_retrieved": retrieved,
        "path_plugins": {k: settings_default(k) for k in ("gate", "retriever")},
        "path_work_per_turn": per_turn,
        "bm25": bm25,
    }


def render(r: dict) -> str:
    ing, b = r["ingest"], r["bm25"]
    lines = [
        f"recall bench: {r['messages']} messages, {r['queries']} query turns, seed {r['seed']}",
        f"load average at start {r['load_average_start']}, at end {r['load_average_end']} (2 cores)",
        "",
        f"ingest            {ing['rate_per_s']:>9.1f} msg/s   {ing['seconds']:.1f} s total, batches of "
        f"{ing['batch_size']}; embedding {ing['embed_seconds']:.1f} s ({ing['embed_share']:.0%}, "
        f"{ing['embed_rate_per_s']} msg/s alone)",
        f"index load        bm25 {r['index_load_s']['bm25']:.2f} s, vectors {r['index_load_s']['vectors']:.2f} s "
        f"(first query after start)",
        "",
        f"{'':18}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}",
        f"{'decision path':18}{r['path_ms']['p50']:>9.2f}{r['path_ms']['p95']:>9.2f}{r['path_ms']['mean']:>9.2f}",
        f"{'floor':18}{r['floor_ms']['p50']:>9.2f}{r['floor_ms']['p95']:>9.2f}{r['floor_ms']['mean']:>9.2f}",
        f"  floor parts p50: embed {r['floor_parts_p50_ms']['embed']:.2f}, dense top-10 "
        f"{r['floor_parts_p50_ms']['dense']:.2f}, bm25 top-10 {r['floor_parts_p50_ms']['bm25']:.2f}",
        f"ratio path/floor  p50 {r['ratio_p50']:.3f}   p95 {r['ratio_p95']:.3f}   (target p50 <= 1.5)",
        f"gate retrieved on {r['gate_retrieved']}/{r['queries']} turns (the path searched on all; "
        f"gate {r['path_plugins']['gate']}, retriever {r['path_plugins']['retriever']})",
        "one turn's work: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in r["path_work_per_turn"].items()),
        "",
        f"BM25 at {b['documents']} documents, {b['queries']} queries (rank-bm25 index built in "
        f"{b['rank_bm25_build_s']:.1f} s)",
        f"{'':18}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}",
        f"{'ours':18}{b['ours_ms']['p50']:>9.3f}{b['ours_ms']['p95']:>9.3f}{b['ours_ms']['mean']:>9.3f}",
        f"{'rank-bm25':18}{b['rank_bm25_ms']['p50']:>9.3f}{b['rank_bm25_ms']['p95']:>9.3f}"
        f"{b['rank_bm25_ms']['mean']:>9.3f}",
        f"speedup p50 {b['speedup_p50']}x (target >= 10x)",
        f"same top-10 as BM25Okapi: set {b['same_top10_set']}/{b['queries']}, order "
        f"{b['same_top10_order']}/{b['queries']} (ties newer first in both; its idf differs from ours)",
        f"same top-10 as BM25Okapi given our (Lucene) idf: set {b['same_idf_top10_set']}/{b['queries']}, "
        f"order {b['same_idf_top10_order']}/{b['queries']}, largest score difference {b['same_idf_max_score_diff']:.1e}",
    ]
    return "\n".join(lines)


def progress_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the command (a `bench_command` plugin)

@click.command("recall")
@click.option("--messages", "n_messages", type=click.IntRange(min=100), default=30000, show_default=True,
              help="Size of the synthetic conversation.")
@click.option("--queries", "n_queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="Query turns timed (decision path and floor each).")
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the synthetic conversation.")
@click.option("--batch-size", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Messages per append_many call while ingesting (one embedding call each).")
@click.option("--bm25-sample", type=click.IntRange(min=1), default=100, show_default=True,
              help="Queries compared with rank-bm25.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Where the bench database goes (default: a temporary directory, removed after).")
def bench_recall(n_messages, n_queries, seed, batch_size, bm25_sample, as_json, data_dir):
    """Ingest rate, decision-path latency against its floor, BM25 against rank-bm25."""
    from memory import embeddings

    embeddings.prefer_throughput()  # a batch job: see embeddings.prefer_throughput

    result = run(n_messages=n_messages, n_queries=n_queries, seed=seed, data_dir=data_dir,
                 batch_size=batch_size, bm25_sample=bm25_sample, progress=progress_to_stderr)
    click.echo(json.dumps(result) if as_json else render(result))
