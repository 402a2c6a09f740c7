"""A deterministic judge, installed like any model backend: it scores by the word overlap it can
see in the judge prompt (words of four or more characters), so every judgement can be checked by
hand. For misuse, a reply brings in the past when it names a dayid. A reply or answer containing
the word GARBLE gets a reply that is not a judgement."""

from __future__ import annotations

import re

from companion.backends.base import TextBackend


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def section(prompt: str, tag: str) -> str:
    m = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", prompt, re.S)
    return m.group(1) if m else ""


def judge(prompt: str) -> str:
    if "<reference>" not in prompt and "<gold>" not in prompt:  # misuse: does the reply name a past message?
        reply = section(prompt, "reply")
        if "GARBLE" in reply:
            return "Hard to say."
        return f"PAST: {'YES' if re.search(r'day[0-9]+-[0-9]+', reply) else 'NO'}"
    if "<reference>" in prompt:  # chat: one point per shared word, at most 2
        reply = section(prompt, "reply")
        if "GARBLE" in reply:
            return "Well, it depends on how you look at it."
        return f"SCORE: {min(2, len(words(section(prompt, 'reference')) & words(reply)))}\nshared words"
    answer = section(prompt, "answer")  # qa: correct when every gold word is in the answer
    if "GARBLE" in answer:
        return "The answer is mostly fine I guess"
    ok = words(section(prompt, "gold")) <= words(answer)
    return f"VERDICT: {'CORRECT' if ok else 'INCORRECT'}"


class Overlap(TextBackend):
    def generate(self, model, messages, params):
        yield judge(str(messages[-1].get("content") or ""))
