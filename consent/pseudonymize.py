"""Pseudonymization for export: find identifiers, replace each with a consistent surrogate.

Detection, three sources, all offline:
- `consent.recognizers` (patterns, spaCy NER, name gazetteer, other scripts: see there), the same
  scan the release gates re-run over every text field;
- deny lists: a researcher-supplied file (one term a line, `#` comments, optionally
  `KIND<TAB>term` with KIND PERSON, PLACE or ORG; plain terms count as PERSON), plus
- terms of the participant's own texts: what the recognizers found anywhere in them
  (`learned_terms`) and names and places after a relation or a preposition (`stated_terms`:
  "my sister Lena", "a friend called Ana", "moved to Porto"), over their messages and their
  claims, so every other mention of them (lowercase, in a companion reply) is replaced too.
Deny-list terms match case-insensitively on word boundaries (over-redaction is the safe side).

Surrogates: the same original (normalized: case and spacing for names, digits for phones,
letters and digits for ID numbers, plates and postcodes)
always gets the same surrogate within one `Pseudonymizer`, i.e. across all files and all
participants of a release. Surrogates are drawn in order of first appearance from pools
shuffled by the release seed (names, places, employers); a pool entry that is itself an original
is skipped. ID numbers, addresses, postcodes, dates of birth and handles become visible
placeholders (`[SSN 1]`, `[address 2]`): a made-up number could be somebody's real one. The map
(`mapping()`) is for the caller to store apart; it is never written into a release.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from consent import recognizers


RELATIONS = (r"sister|brother|friend|boss|mother|mom|mum|dad|father|wife|husband|partner|son|daughter|"
             r"colleague|coworker|cousin|aunt|uncle|neighbou?r|girlfriend|boyfriend|roommate|flatmate|"
             r"grandma|grandpa|grandmother|grandfather|teacher|doctor|therapist|manager|niece|nephew|"
             r"best friend|ex|fianc[eé]e?")
_CAP = r"[A-Z][a-zà-ÿ'’-]+"
_NAME = rf"{_CAP}(?:\s{_CAP})?"
PERSON_RULE = re.compile(
    rf"\b(?:[Mm]y|[Aa]|[Oo]ur|[Hh]er|[Hh]is)\s(?:(?:old|new|little|big|younger|older|best)\s)?(?:{RELATIONS})"
    rf"(?:,|\s(?:called|named|is))?\s({_NAME})")
CALLED_RULE = re.compile(rf"\b(?:called|named)\s({_NAME})")
PLACE_RULE = re.compile(rf"\b(?:in|to|from|near|at|visit|visiting)\s({_CAP}(?:\s{_CAP})?)")
NOT_NAMES = set("""I I'm I've I'll Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March
April May June July August September October November December Christmas Easter The A An My Our Your His Her
Their This That These Those It Is Was And But Or So Oh Ok Okay Yes No Hi Hey Hello Mr Mrs Ms Dr""".split())

PERSON_POOL = ("Avery Blake Casey Dana Emery Finley Harper Jules Kendall Logan Morgan Noel Parker Quinn Reese "
               "Rowan Sawyer Skyler Taylor Tatum Vale Wren Arden Briar Corin Darby Ellis Greer Hollis Jaden "
               "Kai Lennox Marlo Oakley Peyton Remy Sage Shiloh Tristan Zion").split()
PLACE_POOL = ["Eastbrook", "Westmere", "Northvale", "Southport", "Ashford", "Brightwater", "Cedarfield", "Dunmore",
              "Elmstead", "Fairhaven", "Glenrock", "Hillcrest", "Ivydale", "Juniper Bay", "Kingsreach", "Larkspur",
              "Maplecross", "Newhollow", "Oakridge", "Pinecliff", "Queensfold", "Riverton", "Stonebridge",
              "Thornbury", "Umberlee", "Valewood", "Willowmere", "Yarrowdale"]
ORG_POOL = ["Northwind Traders", "Harbor & Finch", "Bluepeak Systems", "Coldwater Group", "Lanternfield Ltd",
            "Marigold Works", "Ironleaf Partners", "Silverline Co", "Quillstone Media", "Redfern Labs",
            "Amberleigh Foods", "Copperhill Services"]
# Kinds whose surrogate is a visible placeholder: a fake SSN could be someone's real one.
PLACEHOLDER = {"ADDRESS": "address", "POSTCODE": "postcode", "DOB": "date of birth", "US_SSN": "SSN",
               "ES_DNI": "DNI", "UK_NI": "NI number", "PLATE": "plate", "HANDLE": "handle", "CARD": "card",
               "IBAN": "iban"}
NAME_KINDS = ("PERSON", "PLACE", "ORG")
_ID_KINDS = {"US_SSN", "ES_DNI", "UK_NI", "PLATE", "POSTCODE", "CARD", "IBAN"}


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str


def _norm(kind: str, s: str) -> str:
    if kind == "PHONE":
        return re.sub(r"\D", "", s)
    if kind in _ID_KINDS:
        return re.sub(r"[\W_]", "", s).casefold()
    return re.sub(r"\s+", " ", s.strip()).casefold()


def stated_terms(texts) -> dict[str, str]:
    """term -> kind (PERSON/PLACE) stated in `texts` by the simple rule of the module doc."""
    out: dict[str, str] = {}
    for t in texts:
        for rule, kind in ((PERSON_RULE, "PERSON"), (CALLED_RULE, "PERSON"), (PLACE_RULE, "PLACE")):
            for m in rule.finditer(t):
                # "to Berlin Monday": keep the run of words before the first stopword
                words = m.group(1).split()
                keep = []
                for w in words:
                    if w in NOT_NAMES:
                        break
                    keep.append(w)
                if keep:
                    out.setdefault(" ".join(keep), kind)
                    if kind == "PERSON" and len(keep) == 2:  # first and last name also alone
                        for w in keep:
                            out.setdefault(w, kind)
    return out


def read_deny_list(path: str | Path) -> dict[str, str]:
    """term -> kind from a researcher's file (see the module doc)."""
    out = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "\t" in line:
            kind, term = (x.strip() for x in line.split("\t", 1))
            if kind.upper() not in ("PERSON", "PLACE", "ORG"):
                raise ValueError(f"{path} line {n}: kind must be PERSON, PLACE or ORG, got {kind!r}")
            out[term] = kind.upper()
        else:
            out[line] = "PERSON"
    return out


def detect_patterns(text: str) -> list[Span]:
    """Every identifier `consent.recognizers` finds in `text` (patterns, NER, names)."""
    return [Span(h.start, h.end, h.kind, h.text) for h in recognizers.scan(text)]


def learned_terms(hits) -> dict[str, str]:
    """Names, places and employers found anywhere in a participant's texts, as deny-list terms, so
    every other mention (lowercase, in the companion's replies) is replaced too. A single word that
    is also an English word ("Rose", "Mark") is left to the recognizers' context."""
    out: dict[str, str] = {}
    for h in hits:
        if h.kind not in ("PERSON", "PLACE", "ORG") or len(h.text) < 3:
            continue
        words = h.text.split()
        if len(words) == 1 and h.text.casefold() in recognizers.english_words():
            continue
        out.setdefault(h.text, h.kind)
        if h.kind == "PERSON" and len(words) == 2:
            for w in words:
                if len(w) >= 3 and w.casefold() not in recognizers.english_words():
                    out.setdefault(w, "PERSON")
    return out


class Pseudonymizer:
    """Consistent surrogates for one release: `apply`/`apply_many` everywhere, `mapping()` kept apart."""

    ROUNDS = 3  # replacing can make a neighbour look like a name; re-scan the changed texts

    def __init__(self, deny: dict[str, str] | None = None, seed: int = 0):
        self.rng = random.Random(f"surrogates:{seed}")
        self.pools = {"PERSON": self.rng.sample(PERSON_POOL, len(PERSON_POOL)),
                      "PLACE": self.rng.sample(PLACE_POOL, len(PLACE_POOL)),
                      "ORG": self.rng.sample(ORG_POOL, len(ORG_POOL))}
        self.map: dict[tuple[str, str], str] = {}  # (kind, normalized original) -> surrogate
        self.originals: dict[tuple[str, str], str] = {}  # first spelling seen
        self.counts: dict[str, int] = {}
        self.used: set[tuple[str, str]] = set()  # keys applied since the caller last cleared it
        self.deny: dict[str, str] = {}
        self._deny_re = None
        self.add_terms(deny or {})
        self.cache: dict = {}  # text -> recognizer hits (consent.recognizers.scan_many)

    def add_terms(self, terms: dict[str, str]) -> None:
        for t, k in terms.items():
            t = t.strip()
            if len(t) >= 2:
                self.deny.setdefault(t, k)
        words = sorted(self.deny, key=len, reverse=True)
        self._deny_re = re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in words) + r")(?!\w)",
                                   re.IGNORECASE) if words else None
        self._deny_kind = {_norm("X", t): k for t, k in self.deny.items()}

    def spans(self, text: str, hits=None) -> list[Span]:
        """Non-overlapping identifier spans (recognizer hits and listed terms): longest, then leftmost."""
        if hits is None:
            hits = recognizers.scan(text)
        # a listed or stated term keeps its kind ("moved to Porto": a place, whatever NER says)
        found = [Span(h.start, h.end, self._deny_kind.get(_norm("X", h.text), h.kind)
                      if h.kind in NAME_KINDS else h.kind, h.text) for h in hits]
        if self._deny_re is not None:
            for m in self._deny_re.finditer(text):
                found.append(Span(m.start(), m.end(), self._deny_kind[_norm("X", m.group(0))], m.group(0)))
        found.sort(key=lambda s: (-(s.end - s.start), s.start))
        taken: list[Span] = []
        for s in found:
            if all(s.end <= t.start or s.start >= t.end for t in taken):
                taken.append(s)
        return sorted(taken, key=lambda s: s.start)

    def preload(self, rows) -> None:
        """Keep the surrogates of an earlier release (kind, original, surrogate rows): a re-issue
        then reads the same as the release it replaces, and pools do not hand them out again."""
        for r in rows:
            key = (r["kind"], _norm(r["kind"], r["original"]))
            if key not in self.map:
                self.map[key] = r["surrogate"]
                self.originals[key] = r["original"]
                self.counts[r["kind"]] = self.counts.get(r["kind"], 0) + 1
        taken = set(self.map.values())
        for kind, pool in self.pools.items():
            pool[:] = [c for c in pool if c not in taken]

    def surrogate(self, kind: str, original: str) -> str:
        key = (kind, _norm(kind, original))
        if kind in NAME_KINDS and key not in self.map:
            # NER may call "Porto" a person in one message and a place in the next: one surrogate
            key = next((k for k in self.map if k[0] in NAME_KINDS and k[1] == key[1]), key)
        self.used.add(key)
        if key in self.map:
            return self.map[key]
        n = self.counts[kind] = self.counts.get(kind, 0) + 1
        banned = {_norm("X", t) for t in self.deny} | {k[1] for k in self.map}
        pool = self.pools.get(kind)
        s = None
        while pool:
            cand = pool.pop(0)
            if _norm("X", cand) not in banned and not any(w in banned for w in _norm("X", cand).split()):
                s = cand
                break
        taken = set(self.map.values())  # a preloaded release may hold "[SSN 2]" already
        while s is None or s in taken:
            s = {"PERSON": f"Person{n}", "PLACE": f"Place{n}", "ORG": f"Organisation{n}",
                 "EMAIL": f"person{n}@example.org", "PHONE": f"+1 555 01{n:02d}",
                 "URL": f"https://example.org/link{n}", "IP": f"192.0.2.{n % 255}"}.get(kind)
            if s is None:
                s = f"[{PLACEHOLDER.get(kind, kind.lower())} {n}]"
            n = self.counts[kind] = n + 1 if s in taken else n
        self.map[key] = s
        self.originals[key] = original
        return s

    def _replace(self, text: str, spans: list[Span]) -> str:
        out, at = [], 0
        for s in spans:
            out.append(text[at:s.start])
            out.append(self.surrogate(s.kind, s.text))
            at = s.end
        out.append(text[at:])
        return "".join(out)

    def apply(self, text: str) -> str:
        return self.apply_many([text])[0]

    def apply_many(self, texts: list[str]) -> list[str]:
        """Pseudonymize many texts (spaCy batches them); re-scans what changed until nothing new is found."""
        texts = list(texts)
        out = [self._replace(t, self.spans(t, h)) if t else t
               for t, h in zip(texts, recognizers.scan_many(texts, cache=self.cache))]
        todo = [i for i, (a, b) in enumerate(zip(texts, out)) if a != b]
        for _ in range(self.ROUNDS):
            if not todo:
                break
            surr = self.surrogates()
            again = []
            for i, hits in zip(todo, recognizers.scan_many([out[i] for i in todo])):
                new = recognizers.uncovered(out[i], hits, surr)
                if new:
                    out[i] = self._replace(out[i], [Span(h.start, h.end, h.kind, h.text) for h in new])
                    again.append(i)
            todo = again
        return out

    def mapping(self, keys=None) -> list[dict]:
        """Every (kind, original, surrogate) used (or those of `keys`): to store apart from the release."""
        return [{"kind": k, "original": self.originals[(k, n)], "surrogate": s} for (k, n), s in self.map.items()
                if keys is None or (k, n) in keys]

    def identifiers(self) -> dict[str, str]:
        """Every original to look for in a written release: detected ones and every listed term."""
        out = {o["original"]: o["kind"] for o in self.mapping()}
        for t, k in self.deny.items():
            out.setdefault(t, k)
        return out

    def surrogates(self) -> set[str]:
        return set(self.map.values())
