"""Pseudonymization for export: find identifiers, replace each with a consistent surrogate.

One participant at a time, in two steps, so every file of a release says the same thing:
1. `plan(texts)` reads *all* of a participant's texts at once (messages, claims, persona, anything
   else the release carries for them) and builds their table of names: every person, place and
   organisation the recognizers (`consent.recognizers`) found anywhere in them, names stated after
   a relation or a preposition (`stated_terms`: "my sister Lena", "a friend called Ana", "moved to
   Porto"), and the researcher's deny list (a file, one term a line, `#` comments, optionally
   `KIND<TAB>term` with KIND PERSON, PLACE or ORG; plain terms count as PERSON). Each name gets
   one kind by vote over every mention (a stated relation or employer counts most; NER calling a
   first name an organisation is outvoted by the name lists), and the relation word, a title or a
   nickname's "Big" stay outside the name ("My sister Lena" -> "My sister Avery", never "My
   Coldwater Group").
2. `apply_many(texts, plan)` replaces, in every text, every mention of a name of the table
   (case-insensitively; a name that is also an English word, "Rose", only when capitalized) and
   every other hit of the recognizers (numbers, emails, addresses ...), then re-scans what changed
   and replaces what the replacing uncovered, until nothing new is found. `survivors` are what is
   still found after that: the export refuses on them, naming each.

Surrogates: the same original (normalized: case and spacing for names, digits for phones,
letters and digits for ID numbers, plates and postcodes) always gets the same surrogate within one
`Pseudonymizer`, i.e. across all files and all participants of a release. A person's full name is
composed from the surrogates of its parts ("Lena Vogt" -> "Avery Ellis", "Lena" -> "Avery",
"Mrs Vogt" -> "Mrs Ellis"): one person, one surrogate, however they are named. Surrogates are
drawn in order of first appearance from pools shuffled by the release seed (gender-neutral first
names, surnames, places, employers); a pool entry that is itself an original anywhere in the
release is skipped. ID numbers, addresses, postcodes, dates of birth and handles become visible
placeholders (`[SSN 1]`, `[address 2]`): a made-up number could be somebody's real one. The map
(`mapping()`) is for the caller to store apart; it is never written into a release.

`allowed` texts (the researcher's reviewed false positives, `--allow`) are never replaced.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from consent import recognizers


RELATIONS = (r"sister|brother|friend|boss|mother|mom|mum|dad|father|wife|husband|partner|son|daughter|"
             r"colleague|coworker|cousin|aunt|uncle|neighbou?r|girlfriend|boyfriend|roommate|flatmate|"
             r"grandma|grandpa|grandmother|grandfather|teacher|doctor|therapist|manager|niece|nephew|"
             r"best friend|ex|fianc[eé]e?|landlord|landlady")
_CAP = r"[A-Z][a-zà-ÿ'’-]+"
_NAME = rf"{_CAP}(?:\s{_CAP})?"
PERSON_RULE = re.compile(
    rf"\b(?:[Mm]y|[Aa]|[Oo]ur|[Hh]er|[Hh]is)\s(?:(?:old|new|little|big|younger|older|best)\s)?(?:{RELATIONS})"
    rf"(?:,|\s(?:called|named|is))?\s({_NAME})")
CALLED_RULE = re.compile(rf"\b(?:called|named)\s({_NAME})")
PLACE_RULE = re.compile(rf"\b(?:in|to|from|near|visit|visiting|moved to|lives in|live in)\s({_CAP}(?:\s{_CAP})?)")
NOT_NAMES = set("""I I'm I've I'll Christmas Easter The A An My Our Your His Her Their This That These Those It Is
Was And But Or So Oh Ok Okay Yes No Hi Hey Hello Mr Mrs Ms Dr""".split())

PERSON_POOL = ("Avery Blake Casey Dana Emery Finley Harper Jules Kendall Logan Morgan Noel Parker Quinn Reese "
               "Rowan Sawyer Skyler Taylor Tatum Vale Wren Arden Briar Corin Darby Ellis Greer Hollis Jaden "
               "Kai Lennox Marlo Oakley Peyton Remy Sage Shiloh Tristan Zion Addison Alexis Ari Aspen Auden Bailey "
               "Bellamy Cameron Carson Dakota Drew Eden Elliot Emerson Frankie Hayden Indigo Jamie Jordan Jessie "
               "Lark Lennon Marley Nico Nova Perry Quincy Riley River Robin Rory Sasha Scout Shay Sidney Sunny "
               "Teagan Toby Wynn").split()
SURNAME_POOL = ("Hart Lane Monroe Sutton Foster Hayes Brooks Carver Fairfax Holloway Lowry Prescott Radley Thorne "
                "Underwood Whitlock Yardley Bramwell Calloway Denholm Fenwick Gresham Kingsley Pemberton Sinclair "
                "Tolliver Wexley Ashdown Blackwood Eastwood Fletcher Gale Ives Jarvis Kemp Lockwood Mercer Oakes "
                "Pryor Winslow Hadley Larkin Mayhew Penrose Quarry Rusk Stroud Tavener").split()
PLACE_POOL = ["Eastbrook", "Westmere", "Northvale", "Southport", "Ashford", "Brightwater", "Cedarfield", "Dunmore",
              "Elmstead", "Fairhaven", "Glenrock", "Hillcrest", "Ivydale", "Juniper Bay", "Kingsreach", "Larkspur",
              "Maplecross", "Newhollow", "Oakridge", "Pinecliff", "Queensfold", "Riverton", "Stonebridge",
              "Thornbury", "Umberlee", "Valewood", "Willowmere", "Yarrowdale", "Amberley Cross", "Birchmoor",
              "Coldharbour", "Deepdale", "Easthaven", "Foxmere", "Greywick", "Hartsfield", "Ironbridge Vale",
              "Kestrel Point", "Lowmoor", "Millbrook", "Northwick", "Oldcastle Vale", "Pebblecombe", "Redwater",
              "Saltmarsh", "Tidewell", "Upperford", "Wrenfield"]
ORG_POOL = ["Northwind Traders", "Harbor & Finch", "Bluepeak Systems", "Coldwater Group", "Lanternfield Ltd",
            "Marigold Works", "Ironleaf Partners", "Silverline Co", "Quillstone Media", "Redfern Labs",
            "Amberleigh Foods", "Copperhill Services", "Brightmoor Health", "Cindervale Logistics",
            "Driftwood Studios", "Emberline Insurance", "Fernbrook Academy", "Glasswing Analytics",
            "Hollowpine Clinic", "Juniper & Moss", "Kettleby Bank", "Lakeshore Robotics", "Mossgate Legal",
            "Nettlefield College"]
# Kinds whose surrogate is a visible placeholder: a fake SSN could be someone's real one.
PLACEHOLDER = {"ADDRESS": "address", "POSTCODE": "postcode", "DOB": "date of birth", "US_SSN": "SSN",
               "ES_DNI": "DNI", "UK_NI": "NI number", "PLATE": "plate", "HANDLE": "handle", "CARD": "card",
               "IBAN": "iban", "ID_NUMBER": "ID number", "BR_CPF": "CPF", "IN_AADHAAR": "Aadhaar",
               "FR_INSEE": "INSEE number", "IT_FISCAL": "codice fiscale", "PL_PESEL": "PESEL", "NL_BSN": "BSN",
               "SE_PERSONNUMMER": "personnummer", "CA_SIN": "SIN", "UK_NHS": "NHS number",
               "CN_RESIDENT": "resident ID", "TR_KIMLIK": "kimlik number", "ZA_ID": "national ID"}
NAME_KINDS = ("PERSON", "PLACE", "ORG")
_ID_KINDS = recognizers.NUMBER_KINDS
# Votes for a name's kind: what the participant said outright counts most.
_WEIGHT = {"stated": 3, "pattern": 3, "deny": 100}


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
    """term -> kind (PERSON/PLACE) stated in `texts` by the simple rules of the module doc."""
    out: dict[str, str] = {}
    for t in texts:
        for rule, kind in ((PERSON_RULE, "PERSON"), (CALLED_RULE, "PERSON"), (PLACE_RULE, "PLACE")):
            for m in rule.finditer(t):
                # "to Berlin Monday": keep the run of words before the first stopword
                words = m.group(1).split()
                while words and words[0].casefold() in recognizers.TRIVIAL:  # "my cousin Big Dre": "Dre"
                    words.pop(0)
                keep = []
                for w in words:
                    if w in NOT_NAMES or recognizers.temporal(w) or w.casefold() in recognizers.NOT_ENTITIES:
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


@dataclass
class Plan:
    """One participant's table of names (normalized term -> kind), built from all their texts."""
    kinds: dict[str, str] = field(default_factory=dict)
    spelling: dict[str, str] = field(default_factory=dict)
    surnames: set[str] = field(default_factory=set)  # terms seen as a surname (after a title, or a name's last part)
    anycase: set[str] = field(default_factory=set)  # listed terms: matched in any case, English word or not
    _rx: object = None
    _plain: set = field(default_factory=set)

    def add(self, term: str, kind: str) -> None:
        key = _norm("X", term)
        if len(key) >= 2 and key not in self.kinds:
            self.kinds[key] = kind
            self.spelling[key] = term
            self._rx = None

    def matcher(self):
        """One regex over every term, longest first, case-insensitive (see `spans`)."""
        if self._rx is None:
            alts = [re.escape(self.spelling[k]).replace(r"\ ", r"\s+") for k in sorted(self.kinds, key=len, reverse=True)]
            self._rx = re.compile(r"(?<![\w@])(?:" + "|".join(alts) + r")(?![\w@])", re.IGNORECASE) if alts else False
            self._plain = {k for k in self.kinds if " " not in k and recognizers.english_word(k)} - self.anycase
        return self._rx or None

    def spans(self, text: str) -> list[Span]:
        """Every mention of a term in `text`; a term that is also an English word ("Rose", "Mark")
        only where it is capitalized."""
        rx = self.matcher()
        if rx is None:
            return []
        out = []
        for m in rx.finditer(text):
            key = _norm("X", m.group(0))
            if key in self.kinds and not (key in self._plain and not m.group(0)[0].isupper()):
                out.append(Span(m.start(), m.end(), self.kinds[key], m.group(0)))
        return out


class Pseudonymizer:
    """Consistent surrogates for one release: `plan` + `apply_many` per participant, `mapping()` kept apart."""

    ROUNDS = 3  # replacing can make a neighbour look like a name; re-scan the changed texts

    def __init__(self, deny: dict[str, str] | None = None, seed: int = 0, allowed=()):
        self.rng = random.Random(f"surrogates:{seed}")
        self.pools = {"PERSON": self.rng.sample(PERSON_POOL, len(PERSON_POOL)),
                      "SURNAME": self.rng.sample(SURNAME_POOL, len(SURNAME_POOL)),
                      "PLACE": self.rng.sample(PLACE_POOL, len(PLACE_POOL)),
                      "ORG": self.rng.sample(ORG_POOL, len(ORG_POOL))}
        self.map: dict[tuple[str, str], str] = {}  # (kind, normalized original) -> surrogate
        self.originals: dict[tuple[str, str], str] = {}  # first spelling seen
        self.counts: dict[str, int] = {}
        self.used: set[tuple[str, str]] = set()  # keys applied since the caller last cleared it
        self.deny: dict[str, str] = {t.strip(): k for t, k in (deny or {}).items() if len(t.strip()) >= 2}
        self.allowed = {_norm("X", a) for a in allowed if a.strip()}
        self.banned: set[str] = {_norm("X", t) for t in self.deny}  # originals anywhere: never a surrogate
        self.cache: dict = {}  # text -> recognizer hits (consent.recognizers.scan_many), shared with the gate
        self.survivors: list[tuple[int, recognizers.Hit]] = []  # of the last apply_many: (text index, hit)

    # --- planning: one participant's names --------------------------------------------------------

    def plan(self, texts: list[str], extra: dict[str, str] | None = None) -> Plan:
        """The table of names of one participant's texts (see the module doc); `extra` adds terms
        (term -> kind) of the participant's own, e.g. their sign-in name."""
        texts = [t for t in texts if t]
        votes: dict[str, dict[str, float]] = {}
        spelling: dict[str, str] = {}
        surname: set[str] = set()

        def vote(term: str, kind: str, weight: float) -> None:
            key = _norm("X", term)
            if len(key) < 2 or key in self.allowed:
                return
            spelling.setdefault(key, term)
            votes.setdefault(key, {}).setdefault(kind, 0)
            votes[key][kind] += weight

        for t, k in self.deny.items():
            vote(t, k, _WEIGHT["deny"])
        for t, k in (extra or {}).items():
            vote(t, k, _WEIGHT["deny"])
        for t, k in stated_terms(texts).items():
            vote(t, k, _WEIGHT["stated"] if k == "PERSON" else 1.5)  # "to X" is weaker evidence of a place
        for hits in recognizers.scan_many(texts, cache=self.cache):
            for h in hits:
                if h.kind not in NAME_KINDS:
                    continue
                vote(h.text, h.kind, _WEIGHT.get(h.source, 1))
                words = h.text.split()
                if h.kind == "PERSON":
                    if h.source == "title" and len(words) == 1:
                        surname.add(_norm("X", h.text))
                    if len(words) in (2, 3):  # the parts of a full name are the same person's
                        for i, w in enumerate(words):
                            if len(w) >= 2 and not recognizers.english_word(w.casefold()):
                                vote(w, "PERSON", 1)
                                if i:
                                    surname.add(_norm("X", w))
        plan = Plan()
        names = recognizers.first_names()
        for key, v in votes.items():  # a known first name counts for a person ("texted Priya": not a place)
            first = key.split()[0]
            if first in names and not recognizers.english_word(first):
                v["PERSON"] = v.get("PERSON", 0) + 1
        for key, v in votes.items():
            kind = max(v, key=lambda k: (v[k], k == "PERSON", k == "PLACE"))
            # the small model calls many first names an organisation ("swimming with Marek")
            if kind == "ORG" and " " not in key and key in names and not recognizers.english_word(key) \
                    and v.get("ORG", 0) < _WEIGHT["pattern"]:
                kind = "PERSON"
            plan.add(spelling[key], kind)
        plan.surnames = {s for s in surname if plan.kinds.get(s) == "PERSON"}
        plan.anycase = {k for k, v in votes.items() if max(v.values()) >= _WEIGHT["deny"]}
        return plan

    def ban(self, plan: Plan) -> None:
        """No surrogate may be an original anywhere in the release: call for every plan first."""
        self.banned |= set(plan.kinds)

    # --- surrogates --------------------------------------------------------------------------------

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

    def _draw(self, kind: str) -> str:
        n = self.counts[kind] = self.counts.get(kind, 0) + 1
        pool = self.pools.get(kind)
        s = None
        while pool:
            cand = pool.pop(0)
            if _norm("X", cand) not in self.banned and not any(w in self.banned for w in _norm("X", cand).split()):
                s = cand
                break
        taken = set(self.map.values())  # a preloaded release may hold "[SSN 2]" already
        while s is None or s in taken:
            s = {"PERSON": f"Person{n}", "SURNAME": f"Surname{n}", "PLACE": f"Place{n}", "ORG": f"Organisation{n}",
                 "EMAIL": f"person{n}@example.org", "PHONE": f"+1 555 01{n:02d}",
                 "URL": f"https://example.org/link{n}", "IP": f"192.0.2.{n % 255}"}.get(kind)
            if s is None:
                s = f"[{PLACEHOLDER.get(kind, kind.lower())} {n}]"
            n = self.counts[kind] = n + 1 if s in taken else n
        return s

    def _keyed(self, kind: str, original: str) -> str:
        key = (kind, _norm(kind, original))
        self.used.add(key)
        if key not in self.map:
            self.map[key] = self._draw(kind)
            self.originals[key] = original
        return self.map[key]

    def surrogate(self, kind: str, original: str, plan: Plan | None = None) -> str:
        """The surrogate of `original`; a person's name is composed of the surrogates of its parts."""
        if kind != "PERSON":
            return self._keyed(kind, original)
        words = original.split()
        surnames = plan.surnames if plan else set()
        lead = []  # "Big Tonio", "Mme Kessler": the title or nickname word stays as it is
        while len(words) > 1 and words[0].casefold().rstrip(".") in recognizers.TRIVIAL:
            lead.append(words.pop(0))
        if lead:
            return " ".join(lead + [self.surrogate(kind, " ".join(words), plan)])
        if len(words) == 1:
            key = _norm("X", original)
            if key in surnames or ("SURNAME", key) in self.map:
                return self._keyed("SURNAME", original)
            return self._keyed("PERSON", original)
        parts = [self._keyed("PERSON", words[0])] + [self._keyed("SURNAME", w) for w in words[1:]]
        whole = " ".join(parts)
        key = ("PERSON", _norm("PERSON", original))
        self.used.add(key)
        self.map.setdefault(key, whole)
        self.originals.setdefault(key, original)
        return self.map[key]

    # --- applying ------------------------------------------------------------------------------------

    def _allowed(self, text: str) -> bool:
        return _norm("X", text) in self.allowed

    def spans(self, text: str, hits=None, plan: Plan | None = None) -> list[Span]:
        """Non-overlapping identifier spans: the plan's names and every other recognizer hit,
        longest first, then leftmost."""
        if hits is None:
            hits = recognizers.scan(text)
        plan = plan or Plan()
        found = plan.spans(text)
        for h in hits:
            if self._allowed(h.text):
                continue
            if h.kind in NAME_KINDS and any(s.start <= h.start and h.end <= s.end for s in found):
                continue  # matched by the plan, with its kind
            found.append(Span(h.start, h.end, h.kind, h.text))
        found.sort(key=lambda s: (-(s.end - s.start), s.start))
        taken: list[Span] = []
        for s in found:
            if all(s.end <= t.start or s.start >= t.end for t in taken):
                taken.append(s)
        return sorted(taken, key=lambda s: s.start)

    def _replace(self, text: str, spans: list[Span], plan: Plan | None) -> str:
        out, at = [], 0
        for s in spans:
            out.append(text[at:s.start])
            out.append(self.surrogate(s.kind, s.text, plan))
            at = s.end
        out.append(text[at:])
        return "".join(out)

    def apply(self, text: str, plan: Plan | None = None) -> str:
        return self.apply_many([text], plan)[0]

    def apply_many(self, texts: list[str], plan: Plan | None = None) -> list[str]:
        """Pseudonymize many texts of one participant with their plan (made here if not given);
        re-scans what changed until nothing new is found. What is still found then is in
        `self.survivors`."""
        texts = list(texts)
        plan = plan if plan is not None else self.plan(texts)
        return self._apply(texts, plan, again=True)

    def _apply(self, texts: list[str], plan: Plan, again: bool) -> list[str]:
        hits = recognizers.scan_many(texts, cache=self.cache)
        out = [self._replace(t, self.spans(t, h, plan), plan) if t else t for t, h in zip(texts, hits)]
        todo = [i for i, (a, b) in enumerate(zip(texts, out)) if a != b]
        self.survivors = []
        grown = False
        for _ in range(self.ROUNDS + 1):
            if not todo:
                break
            surr = self.surrogates()
            nxt = []
            for i, hs in zip(todo, recognizers.scan_many([out[i] for i in todo], cache=self.cache)):
                new = [h for h in recognizers.uncovered(out[i], hs, surr) if not self._allowed(h.text)]
                if new:
                    for h in new:  # a name the replacing uncovered is the participant's everywhere
                        if h.kind in NAME_KINDS and _norm("X", h.text) not in plan.kinds:
                            plan.add(h.text, h.kind)
                            self.banned.add(_norm("X", h.text))
                            grown = True
                    out[i] = self._replace(out[i], [Span(h.start, h.end, h.kind, h.text) for h in new], plan)
                    nxt.append(i)
            todo = nxt
        if grown and again:  # once more from the originals, so the new names are replaced in every text
            return self._apply(texts, plan, again=False)
        # what a last scan still finds is no surrogate: the caller refuses on it
        surr = self.surrogates()
        for i, hs in zip(todo, recognizers.scan_many([out[i] for i in todo], cache=self.cache)):
            self.survivors += [(i, h) for h in recognizers.uncovered(out[i], hs, surr) if not self._allowed(h.text)]
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
