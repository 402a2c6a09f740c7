"""The researcher page's trial part: which gate (fixed, or drawn per turn) each participant's
turns run. The "Trial results" panel (companion.trialpanel) is hooked in under it by app.build."""

from __future__ import annotations

import gradio as gr

from companion import gate, trials
from companion.markup import text as as_text
from companion.panels.common import Shared, r_guard
from memory import registry
from memory.store import StoreError


def live_gates() -> list[str]:
    return [n for n in registry.names("gate") if not getattr(registry.get("gate", n), "eval_only", False)]


class TrialArms:
    def __init__(self, sh: Shared):
        self.sh = sh
        gr.Markdown("#### Trial arms")
        with gr.Row():
            self.part = gr.Dropdown(label="Participant", choices=[""], value="", allow_custom_value=True,
                                    elem_id="arm-part")
            self.gates = gr.Dropdown(label="Gate(s)", multiselect=True, choices=live_gates(), elem_id="arm-gates")
            self.seed = gr.Number(label="Seed (randomize)", value=1, precision=0, elem_id="arm-seed")
        with gr.Row():
            self.fix = gr.Button("Fix the first gate")
            self.rand = gr.Button("Randomize per turn")
        self.msg = gr.Markdown(elem_id="arm-msg")

    def t_set(self, part, gates, seed, randomized: bool, sess: dict):
        settings, store = self.sh.settings, self.sh.store
        r_guard(sess)
        try:
            if randomized:
                trials.randomize(store, part, list(gates or []), int(seed or 0), settings.retriever, settings.policy)
                return f"{as_text(part)}: each turn draws one of {', '.join(gates)} (seed {int(seed or 0)})"
            if not gates:
                return "Choose a gate."
            trials.set_arm(store, part, gates[0], settings.retriever, settings.policy)
            return f"{as_text(part)}: every turn runs gate {gates[0]}"
        except (StoreError, LookupError) as e:
            return f"Refused: {as_text(e)}"

    def wire(self) -> None:
        ins = [self.part, self.gates, self.seed, self.sh.session]
        # Lambdas, as before the split: their API names are /lambda and /lambda_1.
        self.fix.click(gate.researcher(lambda p, g, sd, ss: self.t_set(p, g, sd, False, ss)), ins, [self.msg])
        self.rand.click(gate.researcher(lambda p, g, sd, ss: self.t_set(p, g, sd, True, ss)), ins, [self.msg])
