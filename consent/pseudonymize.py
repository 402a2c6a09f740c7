"""Pseudonymization for export: find identifiers, replace each with a consistent surrogate.

Detection, three sources, all offline:
- presidio-analyzer's pattern recognizers (email, phone, URL, IP, credit card, IBAN) on a
  `NoOpNlpEngine` (no spaCy model). The email recognizer's domain check uses tldextract with
  the bundled suffix list only (`suffix_list_urls=()`, no cache dir): nothing is fetched.
- deny lists: a researcher-supplied file (one term a line, `#` comments, optionally
  `KIND<TAB>term` with KIND PERSON, PLACE or ORG; plain terms count as PERSON), plus
- names and places the participant stated, by a deliberately simple rule (`stated_terms`):
  capitalized words following a relation ("my sister Lena", "my boss, Tom Weber", "a friend
  called Ana") are PERSON; a capitalized word following "in", "to", "from", "near" or "at"
  ("moved to Porto", "in New York") is PLACE, unless it is a weekday, month or pronoun.
  It runs over the participant's own messages and over their claims (the profile), so
  what memory learned is covered. No NER model is used (none is available offline).
Deny-list terms match case-insensitively on word boundaries (over-redaction is the safe side).

Surrogates: the same original (normalized: case and spacing for names, digits for phones)
always gets the same surrogate within one `Pseudonymizer`, i.e. across all files and all
participants of a release. Surrogates are drawn in order of first appearance from pools
shuffled by the release seed; a pool entry that is itself an original is skipped. The map
(`mapping()`) is for the caller to store apart; it is never written into a release.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

PATTERN_ENTITIES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "URL", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE")
KINDS = {"EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "URL": "URL", "IP_ADDRESS": "IP",
         "CREDIT_CARD": "CARD", "IBAN_CODE": "IBAN"}

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


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str
    text: str


def _norm(kind: str, s: str) -> str:
    if kind == "PHONE":
        return re.sub(r"\D", "", s)
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


_ANALYZER = None


def analyzer():
    """presidio's AnalyzerEngine with pattern recognizers only, fully offline (built once)."""
    global _ANALYZER
    if _ANALYZER is None:
        import tldextract
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine
        from presidio_analyzer.predefined_recognizers import (CreditCardRecognizer, EmailRecognizer,
                                                              IbanRecognizer, IpRecognizer, PhoneRecognizer,
                                                              UrlRecognizer)

        offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

        class OfflineEmail(EmailRecognizer):
            def validate_result(self, pattern_text: str):
                return offline(pattern_text).fqdn != ""

        reg = RecognizerRegistry(supported_languages=["en"])
        for r in (OfflineEmail(), PhoneRecognizer(), UrlRecognizer(), IpRecognizer(), CreditCardRecognizer(),
                  IbanRecognizer()):
            reg.add_recognizer(r)
        _ANALYZER = AnalyzerEngine(registry=reg, nlp_engine=NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}]), supported_languages=["en"])
    return _ANALYZER


def detect_patterns(text: str) -> list[Span]:
    res = analyzer().analyze(text=text, language="en", entities=list(PATTERN_ENTITIES))
    return [Span(r.start, r.end, KINDS[r.entity_type], text[r.start:r.end]) for r in res]


class Pseudonymizer:
    """Consistent surrogates for one release: `apply(text)` everywhere, `mapping()` kept apart."""

    def __init__(self, deny: dict[str, str] | None = None, seed: int = 0):
        self.rng = random.Random(f"surrogates:{seed}")
        self.pools = {"PERSON": self.rng.sample(PERSON_POOL, len(PERSON_POOL)),
                      "PLACE": self.rng.sample(PLACE_POOL, len(PLACE_POOL))}
        self.map: dict[tuple[str, str], str] = {}  # (kind, normalized original) -> surrogate
        self.originals: dict[tuple[str, str], str] = {}  # first spelling seen
        self.counts: dict[str, int] = {}
        self.used: set[tuple[str, str]] = set()  # keys applied since the caller last cleared it
        self.deny: dict[str, str] = {}
        self._deny_re = None
        self.add_terms(deny or {})

    def add_terms(self, terms: dict[str, str]) -> None:
        for t, k in terms.items():
            t = t.strip()
            if len(t) >= 2:
                self.deny.setdefault(t, k)
        words = sorted(self.deny, key=len, reverse=True)
        self._deny_re = re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in words) + r")(?!\w)",
                                   re.IGNORECASE) if words else None
        self._deny_kind = {_norm("X", t): k for t, k in self.deny.items()}

    def spans(self, text: str) -> list[Span]:
        """Non-overlapping identifier spans: longest first, then leftmost."""
        found = detect_patterns(text)
        if self._deny_re is not None:
            for m in self._deny_re.finditer(text):
                found.append(Span(m.start(), m.end(), self._deny_kind[_norm("X", m.group(0))], m.group(0)))
        found.sort(key=lambda s: (-(s.end - s.start), s.start))
        taken: list[Span] = []
        for s in found:
            if all(s.end <= t.start or s.start >= t.end for t in taken):
                taken.append(s)
        return sorted(taken, key=lambda s: s.start)

    def surrogate(self, kind: str, original: str) -> str:
        key = (kind, _norm(kind, original))
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
        if s is None:
            s = {"PERSON": f"Person{n}", "PLACE": f"Place{n}", "ORG": f"Organisation{n}",
                 "EMAIL": f"person{n}@example.org", "PHONE": f"+1 555 01{n:02d}",
                 "URL": f"https://example.org/link{n}", "IP": f"192.0.2.{n % 255}",
                 "CARD": f"[card {n}]", "IBAN": f"[iban {n}]"}.get(kind, f"[{kind.lower()} {n}]")
        self.map[key] = s
        self.originals[key] = original
        return s

    def apply(self, text: str) -> str:
        if not text:
            return text
        out, at = [], 0
        for s in self.spans(text):
            out.append(text[at:s.start])
            out.append(self.surrogate(s.kind, s.text))
            at = s.end
        out.append(text[at:])
        return "".join(out)

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
