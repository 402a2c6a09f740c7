"""The model-based extractor: a model proposes through an injected `complete(messages) -> str`
(memory does not import the gateway); the same verification decides. Prompts are versioned data
(memory/data/extract_prompts.json). `Combined` runs several extractors; `RuleAndModel` is the
rules and then a capable model."""

from __future__ import annotations

import json
from importlib import resources
from typing import Callable

from memory import ix_attributes, persona, persona_rules
from memory.extract_rules import RuleExtractor
from memory.messages import Message
from memory.proposal import Proposal
from memory.store import StoreError

PROMPTS = {k: v for k, v in json.loads(resources.files("memory").joinpath("data/extract_prompts.json")
                                      .read_text(encoding="utf-8")).items() if not k.startswith("_")}
PROMPT_VERSION = "extract-v1"


class ModelExtractor:
    """A model proposes; the same verification decides. `complete(messages) -> str` is injected."""

    name = "model"
    needs_model = True

    def __init__(self, complete: Callable[[list[dict]], str], prompt: str = PROMPT_VERSION, batch: int = 20):
        self.complete, self.prompt, self.batch = complete, prompt, batch
        self.version = prompt

    def _system(self) -> str:
        return (PROMPTS[self.prompt].replace("<ATTRS>", "|".join(ix_attributes.ATTRIBUTES))
                .replace("<SETTINGS>", json.dumps({a: v["settings"] for a, v in ix_attributes.ATTRIBUTES.items()}))
                .replace("<TRAITS>", ", ".join(persona_rules.TRAITS))
                .replace("<FACETS>", ", ".join(persona_rules.FACETS)))

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        users = [m for m in msgs if m.sender == "user"]
        by_dayid = {m.dayid: m for m in users}
        out: list[Proposal] = []
        for i in range(0, len(users), self.batch):
            chunk = users[i : i + self.batch]
            body = "\n".join(f"[{m.dayid}] {m.text}" for m in chunk)
            raw = self.complete([{"role": "system", "content": self._system()}, {"role": "user", "content": body}])
            for line in (raw or "").splitlines():
                line = line.strip().strip(",")
                if not line.startswith("{"):
                    continue
                try:
                    d = json.loads(line)
                    src = [s for s in d.get("source_dayids") or [] if isinstance(s, str)]
                    ctx = [by_dayid[src[0]].context] if src and src[0] in by_dayid else []
                    if d.get("kind") == "preference":
                        ix_attributes.check(d["attribute"], d["setting"])
                        out.append(Proposal("preference", ix_attributes.describe(d["attribute"], d["setting"]), src,
                                            str(d.get("evidence", "")), category="preference", confidence=0.7,
                                            attribute=d["attribute"], setting=d["setting"], contexts=ctx,
                                            extractor=self.name))
                    elif d.get("kind") == "persona" and d.get("text"):
                        out.append(_model_persona(d, src, self.name))
                    elif d.get("kind") == "claim" and d.get("text"):
                        out.append(Proposal("claim", str(d["text"]), src, str(d.get("evidence", "")),
                                            category=str(d.get("category") or "other"), slot=d.get("slot") or None,
                                            confidence=0.7, extractor=self.name))
                except (ValueError, KeyError, TypeError, StoreError):
                    continue  # a malformed line is skipped, not guessed at
        return out


class Combined:
    """The rule extractor and a capable model together: the model adds what the rules miss.
    A model claim for a slot the rules already read from the same message is dropped, so two
    wordings of one statement do not supersede each other."""

    name = "rule+model"

    def __init__(self, *extractors):
        self.extractors = extractors
        self.version = "+".join(f"{e.name}:{e.version}" for e in extractors)

    def propose(self, msgs: list[Message]) -> list[Proposal]:
        out: list[Proposal] = []
        for e in self.extractors:
            taken = {(d, p.slot) for p in out if p.kind == "claim" and p.slot for d in p.source_dayids}
            out += [p for p in e.propose(msgs)
                    if not (p.kind == "claim" and p.slot and any((d, p.slot) in taken for d in p.source_dayids))]
        return out


class RuleAndModel(Combined):
    """The rules, then a capable model through `complete` (what background consolidation runs
    when the model is marked capable)."""

    needs_model = True

    def __init__(self, complete: Callable[[list[dict]], str], prompt: str = "extract-v2"):
        super().__init__(RuleExtractor(), ModelExtractor(complete, prompt=prompt))


def _model_persona(d: dict, src: list[str], extractor: str) -> Proposal:
    """A model's persona line as a Proposal; an unknown trait, value or facet raises StoreError."""
    clause = str(d["text"]).strip()
    slot, value = str(d.get("slot") or ""), d.get("value")
    facet = d.get("facet") or None
    if slot == "quirk" or slot.endswith(":*"):  # open-ended: the clause is the value
        value = persona_rules.clause_key(clause)
        slot = f"{slot.removesuffix(':*')}:{value}"
    elif facet is None and not slot.startswith("big_five:"):
        facet = slot.split(":", 1)[0]
    persona.check(slot, str(value or ""), facet)
    evidence = str(d.get("evidence", ""))
    return Proposal("persona", clause, src, evidence, category="persona", slot=slot, confidence=0.7,
                    value=str(value), facet=facet, intensified=bool(persona_rules.INTENSIFIERS.search(evidence)),
                    extractor=extractor)
