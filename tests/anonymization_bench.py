"""Measure export anonymization on the planted sets in tests/data and on generated ones (not a
pytest file).

    python tests/anonymization_bench.py [--sets v1,v2,generated,files:PLANTED.jsonl+ORDINARY.jsonl] [--n 400] [--seed 0] [--scale N] [--cli]
                                        [--code DIR]   # another checkout's code, same run

Sets: `v1` = tests/data/planted_identifiers.jsonl + ordinary_messages.txt (held out, written
before the first recognizers); `v2` = planted_identifiers_v2.jsonl + ordinary_messages_v2.txt
(written before the third-round recognizers: other countries' numbers, scripts, nicknames, record
numbers, lowercase surnames; hard negatives); `generated` = tests/identifier_generators.py
(`--n` identifiers of 19 forms with real check digits, `--n // 2` hard negatives, `--seed`).

Recall: every planted identifier is looked for in the exported conversation row of its message:
`verbatim` survivors (the whole identifier, case-insensitively) and `partial` ones (a distinctive
token of it). Kind: a planted person, place or organisation replaced by a surrogate of another kind
(from the stored map) is counted in `wrong_kind`. Precision: every message of the ordinary sets
(no identifiers) is exported too; each changed word is a false replacement.
Speed: `--scale N` exports N copies of the v1 sets and prints messages a second; `--cli` times a
cold `companion export` process on one participant with 56 messages (the issue's case).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(Path(__file__).parent))
# `--code DIR` measures another checkout (e.g. `git archive` of an older commit) in the same run:
# its packages are imported instead of the installed (editable) ones.
_USE_CODE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f)]; "
             "sys.path.insert(0, {!r})")
# Words of an identifier that say nothing about the person (a surrogate address keeps "Road").
GENERIC = set("road lane ave avenue street st calle de del la dot at com gmail yahoo outlook protonmail n "
              "from on his badge the rue da me net proton mr mrs ms dr prof mx mme big lil little".split())
NAME_KINDS = {"PERSON", "PLACE", "ORG"}


def _read_planted(name: str) -> list[dict]:
    return [json.loads(x) for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x.strip()]


def _read_ordinary(name: str) -> list[str]:
    return [x for x in (DATA / name).read_text(encoding="utf-8").splitlines() if x.strip() and not x.startswith("#")]


def load(which: str = "v1", n: int = 400, seed: int = 0) -> tuple[list[dict], list[str]]:
    if which == "v1":
        return _read_planted("planted_identifiers.jsonl"), _read_ordinary("ordinary_messages.txt")
    if which == "v2":
        return _read_planted("planted_identifiers_v2.jsonl"), _read_ordinary("ordinary_messages_v2.txt")
    if which == "generated":
        import identifier_generators as gen

        rows = [{"participant": f"g{i % 7}", "text": m["text"], "identifiers": [[x, f] for x, f in m["identifiers"]]}
                for i, m in enumerate(gen.messages(n, seed))]
        return rows, gen.ordinary(n // 2, seed)
    if which.startswith("files:"):  # files:PLANTED.jsonl+ORDINARY.jsonl (another author's sets, by path)
        planted_path, ordinary_path = which[len("files:"):].split("+")
        return read_files(Path(planted_path), Path(ordinary_path))
    raise ValueError(f"unknown set {which!r}: v1, v2, generated or files:PLANTED+ORDINARY")


_KIND = {"person": "PERSON", "place": "PLACE", "organisation": "ORG", "organization": "ORG", "nickname": "NICKNAME"}


def read_files(planted: Path, ordinary: Path) -> tuple[list[dict], list[str]]:
    """Sets in another author's shape: planted lines {"id", "text", "identifiers": [{"text", "kind"}]}
    (kinds person / place / organisation / nickname are names; any other is a number or address
    kind, upper-cased), all one participant's; ordinary lines {"id", "text"}."""
    rows = []
    for line in planted.read_text(encoding="utf-8").splitlines():
        if line.strip():
            m = json.loads(line)
            rows.append({"participant": m.get("participant", "b1"), "text": m["text"],
                         "identifiers": [[i["text"], _KIND.get(i["kind"], i["kind"].upper())] for i in m["identifiers"]]})
    texts = [json.loads(x)["text"] for x in ordinary.read_text(encoding="utf-8").splitlines() if x.strip()]
    return rows, texts


def _generic() -> set[str]:
    """Words of an identifier that say nothing about the person: the generators' title and
    nickname words ("Big", "Uncle", "Mrs") stay in the text by design ("Big Avery")."""
    import identifier_generators as gen

    return GENERIC | {w.casefold() for w in gen.NICK_PREFIX + gen.TITLES + gen.RELATIONS}


def _tokens(s: str) -> list[str]:
    return re.findall(r"\w+", s.casefold())


def _kind_of_planted(kind: str) -> str | None:
    return kind if kind in NAME_KINDS else "PERSON" if kind in ("NICKNAME", "LOWERCASE_SURNAME", "SCRIPT_NAME") \
        else None


def run(which: str = "v1", scale: int = 1, n: int = 400, seed: int = 0) -> dict:
    from consent import export as exporter
    from consent import records
    from memory import messages
    from memory.store import Store

    planted, ordinary = load(which, n, seed)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "home")
        by_p: dict[str, list[dict]] = {}
        for r in planted:
            by_p.setdefault(r["participant"], []).append(r)
        by_p["p0"] = [{"participant": "p0", "text": t, "identifiers": []} for t in ordinary]
        t0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
        total = 0
        for p, rows in by_p.items():
            records.accept(store, p, tz="UTC")
            # copies differ by a counter, so no scan is saved by repeated text
            msgs = [dict(sender="user", text=r["text"] + (f" ({i // len(rows)})" if i >= len(rows) else ""),
                         context="personal", ts=t0 + timedelta(minutes=7 * i))
                    for i, r in enumerate(rows * scale)]
            messages.append_many(store, p, msgs)
            total += len(msgs)
        start = time.perf_counter()
        try:
            exporter.export(store, Path(tmp) / "release", seed=1)
            refused = []
        except exporter.ReleaseRefused as e:
            # what the pseudonymizer left is still measured: the gate's verdict is reported apart
            refused = e.problems
            gate, exporter.check_release = exporter.check_release, lambda *a, **k: []
            try:
                exporter.export(store, Path(tmp) / "release", seed=1)
            finally:
                exporter.check_release = gate
        seconds = time.perf_counter() - start
        release = store.conn.execute("SELECT release FROM exports ORDER BY rowid DESC LIMIT 1").fetchone()[0]
        pid = dict(store.conn.execute("SELECT participant, pseudonym FROM export_members WHERE release=?",
                                      (release,)).fetchall())
        surrogate_kind = {}
        for kind, original, _ in store.conn.execute(
                "SELECT kind, original, surrogate FROM export_surrogates WHERE release=?", (release,)):
            surrogate_kind.setdefault(original.casefold(), kind)
        verbatim, partial, kinds, wrong_kind = [], [], {}, []
        generic = _generic()
        fp_words, fp_msgs, words, changed = [], 0, 0, []
        for p, rows in by_p.items():
            conv = [json.loads(x) for x in (Path(tmp) / "release" / pid[p] / "conversation.jsonl")
                    .read_text(encoding="utf-8").splitlines()]
            for r, out in zip(rows, conv):
                got = out["text"].casefold()
                for ident, kind in r["identifiers"]:
                    kinds.setdefault(kind, [0, 0])[1] += 1
                    if ident.casefold() in got:
                        verbatim.append((kind, ident))
                        kinds[kind][0] += 1
                        continue
                    left = [w for w in _tokens(ident) if w not in generic and len(w) >= 2
                            and not (w.isdigit() and len(w) < 3)  # "[CPF 10]" is no part of a CPF
                            and re.search(rf"(?<!\w){re.escape(w)}(?!\w)", got)]
                    if left:
                        partial.append((kind, ident, left))
                    want = _kind_of_planted(kind)
                    have = surrogate_kind.get(ident.casefold())
                    if want and have in NAME_KINDS and have != want:
                        wrong_kind.append(f"{ident} ({want}) -> {have}")
                if p == "p0":
                    a, b = _tokens(r["text"]), set(_tokens(out["text"]))
                    words += len(a)
                    lost = [w for w in a if w not in b]
                    fp_words += lost
                    fp_msgs += bool(lost)
                    if lost:
                        changed.append(f"{r['text']!r} -> {out['text']!r}")
        store.close()
    planted_n = sum(len(r["identifiers"]) for r in planted)
    return {"set": which, "gate_refused": len(refused), "planted": planted_n, "verbatim_survivors": len(verbatim),
            "partial_survivors": len(partial),
            "by_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(kinds.items())},
            "survivors": [f"{k}: {i}" for k, i in verbatim] + [f"{k}: {i} (partly: {' '.join(w)})" for k, i, w in partial],
            "wrong_kind": wrong_kind,
            "ordinary_messages": len(ordinary), "ordinary_messages_changed": fp_msgs,
            "ordinary_words": words, "ordinary_words_replaced": len(fp_words), "replaced": sorted(set(fp_words)),
            "changed": changed,
            "messages_exported": total, "export_seconds": round(seconds, 2),
            "messages_per_second": round(total / seconds, 1)}


CLI_CHAT = ["my sister Lena moved to Porto last month", "On Tuesdays I go swimming with Marek",
            "Dessert was amazing at the new place", "remind me to call the dentist on December 14th",
            "The postcode there is 75009.", "I work at Brightlane Logistics as an analyst", "the bus was late again"]


def cli_seconds(messages_n: int = 56, code: str | None = None) -> dict:
    """A cold `companion export` process on one participant with `messages_n` messages."""
    from consent import records
    from memory import messages
    from memory.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        store = Store(home)
        records.accept(store, "mariaa", tz="UTC")
        t0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
        rows = [dict(sender="user" if i % 2 == 0 else "companion",
                     text=CLI_CHAT[(i // 2) % len(CLI_CHAT)] + ("" if i % 2 == 0 else " - noted."),
                     context="personal", ts=t0 + timedelta(minutes=3 * i)) for i in range(messages_n)]
        messages.append_many(store, "mariaa", rows)
        store.close()
        env = {**os.environ, "COMPANION_HOME": str(home)}
        boot = (_USE_CODE.format(code) + "; ") if code else ""
        start = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", boot + "from companion.cli import main; main()", "export", "--out",
                            str(Path(tmp) / "rel")], env=env, capture_output=True, text=True)
        return {"cli_messages": messages_n, "cli_export_seconds": round(time.perf_counter() - start, 2),
                "cli_exit": r.returncode, "cli_tail": (r.stdout + r.stderr).strip().splitlines()[-1:]}


def scan_rate(texts: list[str]) -> dict:
    """Recognizer throughput alone (warm: pipeline loaded), on texts never scanned before."""
    from consent import recognizers

    recognizers.scan("warm up: Lena moved to Porto, call +44 20 7946 0958")
    start = time.perf_counter()
    recognizers.scan_many(texts)
    s = time.perf_counter() - start
    return {"scan_texts": len(texts), "scan_seconds": round(s, 2), "scan_per_second": round(len(texts) / s, 1)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="v1,v2,generated")
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--full", action="store_true", help="Also list every changed ordinary message.")
    ap.add_argument("--code", default=None, help="Measure the packages of this checkout instead of the installed ones.")
    a = ap.parse_args()
    if a.code:
        exec(_USE_CODE.format(str(Path(a.code).resolve())))
    out = {}
    if a.cli:  # first, while nothing is loaded in this process either
        out["cli"] = cli_seconds(code=str(Path(a.code).resolve()) if a.code else None)
    if a.scale > 1:  # a copy of a message is not a new identifier: only speed is meaningful here
        r = run("v1", a.scale)
        out["speed"] = {k: r[k] for k in ("messages_exported", "export_seconds", "messages_per_second")}
        planted, ordinary = load("generated", a.n, a.seed + 1)
        out["speed"].update(scan_rate([r["text"] for r in planted] + ordinary))
    else:
        for which in a.sets.split(","):
            r = run(which, n=a.n, seed=a.seed)
            if not a.full:
                r.pop("changed")
            out[which] = r
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    print()
