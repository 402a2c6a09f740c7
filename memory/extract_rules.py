"""The rule-based extractor: explicit first-person statements; no model.

Facts come from the parse (memory.facts); preferences from the phrase tables
(memory.ix_attributes) and the clause classifier (memory.preferences); persona statements
from memory.persona_rules."""

from __future__ import annotations

import functools
import re

from memory import derived, facts, ix_attributes, persona_rules, preferences
from memory.messages import CONTEXTS, Message
from memory.proposal import HYPOTHETICAL, QUOTED, SENTENCE, Proposal


class RuleExtractor:
    """Explicit first-person statements of fact, of preference and about oneself (persona,
    memory.persona_rules); no model."""

    name = "rule"
    version = "4"  # 2: persona statements; 3: facts from the parse (memory.facts); 4: the learned road, past states

    def __init__(self, kinds: tuple[str, ...] = ("claim", "preference", "persona"), learned: bool | None = None):
        self.kinds = kinds  # the reply path asks for preferences only: it does not pay for the parse
        self.learned = learned  # the fact reader's learned road (memory.fact_classifier); None: facts.learned_road_on

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        out: list[Proposal] = []
        users = [m for m in msgs if m.sender == "user"]  # never from companion messages: they may quote memory
        parsed = facts.extract_many([m.text for m in users], self.learned) if "claim" in self.kinds else [[] for _ in users]
        for m, found in zip(users, parsed):
            out += [Proposal("claim", f.text, [m.dayid], f.evidence, category=f.category, slot=f.slot,
                             confidence=0.9 if f.origin == "rule" else 0.7, ends=list(f.ends),
                             extractor=self.name if f.origin == "rule" else f.origin) for f in found]
        for m in users:
            text = QUOTED.sub(" ", m.text)  # quoted text is someone else's words
            for s in SENTENCE.finditer(text):
                sentence = s.group(0).strip()
                if not sentence or sentence.endswith("?"):
                    continue
                if "persona" in self.kinds:
                    out += self._persona(m, sentence)
            if "preference" in self.kinds:
                out += self._preferences(m)
        return out

    def _persona(self, m: Message, sentence: str) -> list[Proposal]:
        out = []
        for h in persona_rules.find(sentence):
            if HYPOTHETICAL.search(sentence[: h.start]):
                continue  # "if I were an introvert ..." states nothing
            out.append(Proposal("persona", h.clause, [m.dayid], h.evidence, category="persona", slot=h.slot,
                                confidence=0.8, value=h.value, facet=h.facet, intensified=h.intensified,
                                extractor=self.name))
        return out

    def _preferences(self, m: Message) -> list[Proposal]:
        """Clause by clause, gated by the parse: the rule phrases, then the classifier over
        sentence embeddings for what people say in their own words (memory.preferences)."""
        return [Proposal("preference", ix_attributes.describe(f.attribute, f.setting), [m.dayid], f.evidence,
                         category="preference", confidence=0.8 if f.road == "rule" else round(0.8 * f.probability, 3),
                         attribute=f.attribute, setting=f.setting, contexts=f.contexts,
                         extractor=self.name if f.road == "rule" else preferences.NAME)
                for f in preferences.find(m.text, m.context, rules=preference_phrases)]


@functools.lru_cache(maxsize=1)
def _compiled(version: int) -> tuple:
    return (re.compile(ix_attributes.BOTH), re.compile(ix_attributes.WORK), re.compile(ix_attributes.PERSONAL),
            [(re.compile(p), a, s) for p, a, s in ix_attributes.PHRASES])


def preference_phrases(sentence: str, said_in: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The contexts a sentence speaks for (its own unless it names work, personal or both) and the
    (attribute, setting, words) it states; within an attribute the first matching phrase wins."""
    both, work, personal, phrases = _compiled(len(ix_attributes.PHRASES))
    n = derived.norm(sentence)
    contexts = list(CONTEXTS) if both.search(n) else ["work"] if work.search(n) else \
        ["personal"] if personal.search(n) else [said_in]
    found, done = [], set()
    for pattern, attribute, setting in phrases:
        if attribute not in done and (hit := pattern.search(n)):
            done.add(attribute)
            found.append((attribute, setting, hit.group(0)))
    return contexts, found


_compiled(len(ix_attributes.PHRASES))  # compiled at import, not on a participant's first turn
