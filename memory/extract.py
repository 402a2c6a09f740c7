"""Extraction: propose, verify against the cited messages, merge.

    propose   an Extractor turns participant messages into Proposals (claims, preferences and
              persona statements),
              each citing source dayids and quoting its evidence
    verify    each proposal is checked against the messages it cites: they must exist, be the
              participant's own (never the companion's: memory text the companion says is not
              captured back) and contain the evidence -> supported; only the content words ->
              repairable (kept, confidence downgraded); otherwise unsupported (dropped). Every
              verdict is logged (memory_events, kind 'proposal'). A persona statement whose cited
              words are negated in the message ("I'm not an introvert") is unsupported.
    merge     claims.add / cells.set_ / persona.add deduplicate and supersede; tombstoned (dayid, text) pairs
              are skipped (a deleted item is not re-derived from the same messages); each new
              claim or cell gets its file-memory line (added, or replacing its predecessor's).
              Persona items get none: they are read whole through memory.persona.persona().

Two extractors share the interface `propose(messages) -> list[Proposal]`: `RuleExtractor`
(explicit first-person statements; no model) and `ModelExtractor` (a prompt kept as versioned
data, sent through an injected `complete(messages) -> str`: memory does not import the gateway).

The pieces live in memory.proposal, memory.extract_rules, memory.extract_model, memory.verify
and memory.consolidate; this module names what other code imports, and `build` makes a
registered extractor.
"""

from __future__ import annotations

from typing import Callable

from memory import registry
from memory.claims import profile_rows
from memory.consolidate import Report, consolidate, merge, rebuild
from memory.extract_model import PROMPT_VERSION, PROMPTS, Combined, ModelExtractor, RuleAndModel
from memory.extract_rules import RuleExtractor, preference_phrases
from memory.proposal import Proposal
from memory.verify import Verdict, content_words, verify

__all__ = ["PROMPTS", "PROMPT_VERSION", "Combined", "ModelExtractor", "Proposal", "Report", "RuleAndModel",
           "RuleExtractor", "Verdict", "build", "consolidate", "content_words", "merge", "preference_phrases",
           "profile_rows", "rebuild", "verify"]


def build(name: str, complete: Callable[[list[dict]], str] | None = None):
    """The registered extractor NAME (memory.registry kind "extractor"); one that asks a model
    (`needs_model`) is given `complete(messages) -> str`."""
    factory = registry.get("extractor", name)
    if not getattr(factory, "needs_model", False):
        return factory()
    if complete is None:
        raise ValueError(f"extractor {name!r} asks a model: give it a complete(messages) function")
    return factory(complete)
