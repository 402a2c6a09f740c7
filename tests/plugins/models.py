"""Model backends with scripted faults, for the gateway's failure paths."""

from __future__ import annotations

import time

from companion.backends.base import TextBackend


class Failing(TextBackend):
    def generate(self, model, messages, params):
        raise RuntimeError("backend exploded")
        yield  # pragma: no cover


class Slow(TextBackend):
    def generate(self, model, messages, params):
        time.sleep(3)
        yield "too late"


class Empty(TextBackend):
    def generate(self, model, messages, params):
        yield "   "


class Flaky(TextBackend):
    """Fails on every odd call: a single retry recovers."""

    calls = 0

    def generate(self, model, messages, params):
        type(self).calls += 1
        if type(self).calls % 2 == 1:
            raise ConnectionError("transient")
        yield "recovered"


class Extracting(TextBackend):
    """Plays a capable extraction model: for every participant line "I live in X" in the prompt it
    proposes the claim, citing that line's dayid and quoting it (JSON lines, as extract-v1 asks)."""

    def generate(self, model, messages, params):
        import json
        import re

        said = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
        for dayid, place in re.findall(r"\[(day\d+-\d+)\][^\n]*?I live in (\w+)", said):
            yield json.dumps({"kind": "claim", "text": f"Lives in {place}", "category": "residence",
                              "slot": "residence", "source_dayids": [dayid], "evidence": f"I live in {place}"}) + "\n"
        yield '{"kind": "claim", "text": "Owns a yacht", "category": "other", "source_dayids": ["day1-1"], "evidence": "my yacht"}\n'


class Recorder(TextBackend):
    """Records what each call was given (messages, params) and answers with a fixed sentence."""

    calls: list[dict] = []

    def generate(self, model, messages, params):
        type(self).calls.append({"messages": [dict(m) for m in messages], "params": dict(params)})
        yield "Noted."


class Paragraphs(TextBackend):
    """Answers in two paragraphs (and a backslash), as capable models do."""

    def generate(self, model, messages, params):
        yield "First paragraph.\n\nSecond paragraph, with a back\\slash."


class CutByBudget(TextBackend):
    """Runs out of tokens mid-sentence, as any model does under a small budget (finish_reason length)."""

    def generate(self, model, messages, params):
        yield "Porto is on the Douro. The bridges are iron. And the wine is"

    def streaming(self, model, messages, *args, optional_params=None, **kwargs):
        chunks = list(super().streaming(model, messages, *args, optional_params=optional_params, **kwargs))
        last = chunks[-1]
        last["finish_reason"] = "length"
        return iter(chunks)


class Verbatim:
    """A third party's extractor (kind "extractor"): every participant message whose text starts
    with "Note:" is proposed as a claim, quoting itself."""

    name = "verbatim"
    version = "1"

    def propose(self, msgs):
        from memory.extract import Proposal

        return [Proposal("claim", m.text[len("Note:"):].strip(), [m.dayid], m.text[len("Note:"):].strip(),
                         extractor=self.name) for m in msgs if m.sender == "user" and m.text.startswith("Note:")]


class Inventor(TextBackend):
    """A small model's habit: one sentence about someone the participant named, two about people
    they never mentioned."""

    def generate(self, model, messages, params):
        for s in ["Arun will love that. ", "Your friend Sarah can join you. ", "Your husband will cook."]:
            yield s


class OnlyInventions(TextBackend):
    """Every sentence names someone never mentioned."""

    calls = 0

    def generate(self, model, messages, params):
        type(self).calls += 1
        yield "Maria says hi. Your husband Tom agrees."
