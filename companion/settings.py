"""Settings: defaults, overridden by COMPANION_* environment variables, then by CLI flags."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# The defaults of every registered kind the app chooses by name (memory.registry); the Settings
# fields below default to these, and commands that take a kind default to them too.
DEFAULT_MODEL = "local/smollm2-135m"
DEFAULT_GATE = "learned"  # best on validation it was not trained on (README, "Gates")
DEFAULT_RETRIEVER = "hybrid"
DEFAULT_POLICY = "earlier_turns"
DEFAULT_IX_SOURCE = "cells"
DEFAULT_EXTRACTOR = "rule"  # `companion memory consolidate/rebuild`, and background consolidation
CAPABLE_EXTRACTOR = "combined"  # background consolidation when the model is marked capable


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="COMPANION_", extra="ignore")

    home: Path = Field(default=Path("~/.companion"), description="data directory (env COMPANION_HOME)")
    model: str = Field(default=DEFAULT_MODEL, description="any litellm model string, or echo")
    gate: str = DEFAULT_GATE
    retriever: str = DEFAULT_RETRIEVER
    policy: str = DEFAULT_POLICY
    # Params by kind and plugin name, e.g. COMPANION_PARAMS='{"gate": {"lexical":
    # {"threshold": 0.3}}, "retriever": {"hybrid": {"recipe": "dense_heavy"}}}'.
    params: dict[str, dict] = Field(default_factory=dict)
    recent_window: int = Field(default=6, ge=0, description="messages always in the prompt")
    k: int = Field(default=5, ge=1, description="hits a retriever returns")
    budget_tokens: int = Field(default=400, ge=0, description="tokens of retrieved text in the prompt")
    file_memory: bool = Field(default=True, description="read the participant's file memory into every prompt")
    consolidate_minutes: float = Field(default=1.0, gt=0, description="how often the app checks who is due for extraction")
    consolidate_idle_minutes: float = Field(default=5.0, ge=0, description="silence after which new messages are extracted")
    consolidate_every: int = Field(default=20, ge=1, description="new messages that trigger extraction without waiting")
    # A capable model (one that follows the extraction prompt) also proposes facts, preferences
    # and persona items in background consolidation, checked like the rules' proposals. Never the
    # embedded demo model (local/...), whatever this says.
    model_capable: bool = Field(default=False, description="the configured model also extracts memory")
    max_tokens: int = Field(default=200, ge=1, description="longest reply, in tokens")
    timeout: float = Field(default=120.0, gt=0, description="seconds before a model call is abandoned")
    retries: int = Field(default=1, ge=0, description="extra attempts after a model error")
    # The IX Wrapper: what the selector reads when the model declares no setting (a registered
    # ix_source: none | cells | file | retrieval | oracle built in), whether the model is offered IX and action tools (auto: when
    # it takes tools), and how long a silence ends a session (declared settings hold for one).
    ix_source: str = Field(default=DEFAULT_IX_SOURCE, description="what the IX selector reads (a registered ix_source)")
    tools: str = Field(default="auto", pattern="^(auto|on|off)$", description="offer IX and action tools to the model")
    cite_notes: str = Field(default="auto", pattern="^(auto|on|off)$",
                            description="quote the participant's statement when a recall answer does not name it")
    # Say only what memory holds (issue 25): a question about the participant's own past is answered
    # from the statement of theirs that answers it (or they are told it was not said), without the
    # model; a sentence naming anyone or anywhere they never mentioned is dropped; the prompt is the
    # compact one. auto: every model not marked capable (the embedded demo model among them).
    grounded: str = Field(default="auto", pattern="^(auto|on|off)$",
                          description="answer recall from memory, drop unheard names (auto: models not marked capable)")
    # Within the grounded answer: where no rule reader finds the value, the learned answer-statement
    # selector (memory/answer_select.py) quotes the participant's sentence that answers, above its
    # stored threshold (else: not told). auto: whenever the grounded answer runs.
    answer_select: str = Field(default="auto", pattern="^(auto|on|off)$",
                               description="quote the statement a learned selector finds when no reader finds the value")
    session_gap_minutes: float = Field(default=30.0, gt=0, description="silence that ends a session")
    researcher_password: str | None = Field(default=None, description="opens the researcher page")
    retention_days: int | None = Field(default=None, ge=1, description="messages and traces older than this are swept daily")
    trusted_proxies: str = Field(default="", description="reverse proxies whose X-Forwarded-For is believed "
                                 "(comma-separated addresses or networks); empty: none, the socket's peer counts")
    host: str = "127.0.0.1"
    port: int = 7860

    def params_for(self, kind: str, name: str) -> dict:
        return dict(self.params.get(kind, {}).get(name, {}))

    @property
    def data_dir(self) -> Path:
        return self.home.expanduser()


def load(**overrides) -> Settings:
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
