"""The judge: a model that scores replies, with its prompts kept as versioned data.

    j = Judge("openai/gpt-4o-mini")                  # any litellm model string, through the gateway
    verdict = j.chat(probe_text, reference_reply, reply)    -> Judgement(value=0|1|2, ...)
    verdict = j.qa(question, gold_answer, answer)           -> Judgement(value=1.0|0.0, ...)
    verdict = j.judge(MISUSE_PROMPT, message, "", reply)    -> 1.0 when the reply brings in the past

The judge's reply is parsed strictly: its first non-empty line must be exactly the label line the
prompt asks for (`SCORE: 0|1|2`, `VERDICT: CORRECT|INCORRECT`, `PAST: YES|NO`; case and surrounding spaces
aside). Anything else is a judgement *missing* with the reason (the start of what the judge
said), never a 0: a judge that rambles has not said the reply was wrong. A model fault is
missing too, with the fault. Prompts are never edited in place: a changed prompt gets a new
version key, and every report names the version it used.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from companion import gateway

PROMPTS = {
    "chat-content-v1": {
        "system": (
            "You grade a companion's reply to a participant's message against a reference reply written for the "
            "same message by someone who knew the whole conversation. Grade content match only:\n"
            "2 = the reply carries the reference's key content (the same facts, names, places, and references to "
            "earlier conversation);\n"
            "1 = it carries part of that content, or says it more vaguely;\n"
            "0 = it carries none of the reference's key content, or contradicts it.\n"
            "Wording, style, tone and length do not matter.\n"
            "Answer with exactly one first line `SCORE: 0`, `SCORE: 1` or `SCORE: 2`, then at most one line "
            "giving the reason."
        ),
        "user": "<message>\n{question}\n</message>\n<reference>\n{reference}\n</reference>\n<reply>\n{reply}\n</reply>",
        "label": r"SCORE:\s*([012])",
        "values": {"0": 0.0, "1": 1.0, "2": 2.0},
    },
    "qa-correct-v1": {
        "system": (
            "You grade an answer to a question about a conversation against the gold answer. CORRECT if the answer "
            "states the gold answer's content (paraphrase is fine, extra detail is fine when it does not contradict "
            "the gold); INCORRECT otherwise, including answers that hedge between options. When the gold answer "
            "says the information is not in the conversation, CORRECT only if the answer also declines to give it.\n"
            "Answer with exactly one first line `VERDICT: CORRECT` or `VERDICT: INCORRECT`, then at most one line "
            "giving the reason."
        ),
        "user": "<question>\n{question}\n</question>\n<gold>\n{reference}\n</gold>\n<answer>\n{reply}\n</answer>",
        "label": r"VERDICT:\s*(CORRECT|INCORRECT)",
        "values": {"CORRECT": 1.0, "INCORRECT": 0.0},
    },
    "misuse-v1": {
        "system": (
            "A participant wrote a message to their companion that needs nothing from earlier conversations "
            "(a greeting, a new topic). Decide whether the companion's reply brings in the past anyway: it "
            "mentions or relies on something from earlier conversations (facts about the participant, earlier "
            "events, things either of them said before) that this message did not call for.\n"
            "Answer with exactly one first line `PAST: YES` or `PAST: NO`, then at most one line giving the reason."
        ),
        "user": "<message>\n{question}\n</message>\n<reply>\n{reply}\n</reply>",
        "label": r"PAST:\s*(YES|NO)",
        "values": {"YES": 1.0, "NO": 0.0},
    },
}
CHAT_PROMPT = "chat-content-v1"
QA_PROMPT = "qa-correct-v1"
MISUSE_PROMPT = "misuse-v1"


class Judgement(BaseModel):
    value: float | None  # None: missing (reason says why)
    reason: str | None = None  # why missing
    raw: str | None = None  # what the judge said (kept in outcomes.jsonl)
    prompt: str  # the prompt version


def messages_for(version: str, question: str, reference: str, reply: str) -> list[dict]:
    p = PROMPTS[version]
    return [{"role": "system", "content": p["system"]},
            {"role": "user", "content": p["user"].format(question=question, reference=reference, reply=reply)}]


def parse(version: str, raw: str) -> Judgement:
    """Strict: the first non-empty line is the label line, or the judgement is missing."""
    p = PROMPTS[version]
    first = next((line.strip() for line in (raw or "").splitlines() if line.strip()), "")
    m = re.fullmatch(p["label"], first, flags=re.IGNORECASE)
    if not m:
        shown = first[:80] + ("…" if len(first) > 80 else "")
        return Judgement(value=None, raw=raw, prompt=version,
                         reason=f"unparseable judgement: first line {shown!r} is not {p['label']!r}")
    return Judgement(value=p["values"][m.group(1).upper()], raw=raw, prompt=version)


class Judge:
    def __init__(self, model: str, timeout: float = 120.0, retries: int = 1, max_tokens: int = 60):
        self.model = gateway.resolve(model)
        self.timeout, self.retries, self.max_tokens = timeout, retries, max_tokens
        self.calls = 0
        self.tokens = {"prompt": 0, "completion": 0}

    def describe(self) -> dict:
        return {"model": self.model, "prompts": list(PROMPTS), "calls": self.calls, "tokens": self.tokens}

    def judge(self, version: str, question: str, reference: str, reply: str) -> Judgement:
        self.calls += 1
        try:
            done = gateway.complete(self.model, messages_for(version, question, reference, reply),
                                    timeout=self.timeout, max_tokens=self.max_tokens, retries=self.retries)
        except gateway.ModelError as e:
            return Judgement(value=None, prompt=version, reason=f"judge model fault: {str(e)[:200]}")
        self.tokens["prompt"] += done.prompt_tokens or 0
        self.tokens["completion"] += done.completion_tokens or 0
        return parse(version, done.text)

    def chat(self, message: str, reference: str, reply: str) -> Judgement:
        return self.judge(CHAT_PROMPT, message, reference, reply)

    def qa(self, question: str, gold: str, answer: str) -> Judgement:
        return self.judge(QA_PROMPT, question, gold, answer)
