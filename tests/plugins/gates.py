"""A researcher's own gate, installed like any third-party plugin."""

from memory.gates import Decision, Gate


class QuestionMark(Gate):
    """Retrieves exactly when the message is a question."""

    name = "question_mark"

    def decide(self, ctx):
        q = ctx.text.rstrip().endswith("?")
        return Decision(retrieve=q, score=float(q), threshold=0.5,
                        reason="a question" if q else "not a question")
