"""The benchmark format (docs/FORMAT.md) as pydantic models: validation at the boundary only.

They live in consent (not eval) because the exporter, the release checker and the annotator write
and check what eval reads; `eval.formats` re-exports them.

Every model keeps unknown fields (extra="allow"): a newer exporter may add fields and an older
reader must still load the release; they are written back unchanged by `write_release`.
Fields that change a reported number (stratum, scoreable, locus, tier, grounding,
referent_on_screen, verdict, evidence) are required, so a gap in the data surfaces as an error
naming file, line and field instead of silently moving a metric.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Any, Literal, Mapping

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from memory.keys import parse_dayid

FORMAT = "companion-benchmark"
VERSION = 1

Sender = Literal["user", "companion"]
Stratum = Literal["proportional", "enriched", "control"]
Locus = Literal["thread", "episode", "profile", "companion", "none"]
Tier = Literal["basic", "intermediate", "hard", "edge"]
OnScreen = Literal["no", "partial", "clear"]
Verdict = Literal["supported", "repairable", "unsupported", "pending", "pruned_supported", "undetermined"]


def _dayid(v: str) -> str:
    parse_dayid(v)  # raises KeyError_ (a ValueError), which pydantic reports under the field
    return v


DayId = Annotated[str, AfterValidator(_dayid)]
# Participant ids become folder names: refuse anything that could leave the release folder.
ParticipantId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class Counts(_Model):
    messages: int | None = None
    chat_rows: int | None = None
    qa: int | None = None
    claims: int | None = None


class SampledParticipant(_Model):
    population: int = Field(ge=0)  # participant messages the draw was made from
    drawn: int = Field(ge=0)
    digest: str  # sampling_digest of the drawn probe dayids, fixed at export time


class Sampling(_Model):
    """How the proportional stratum was drawn: the record V3 is checked against.

    Written by the exporter before anyone has looked at a probe, so the digest pins the drawn set:
    a probe added to, dropped from or relabelled into the stratum after annotation changes it.
    """
    stratum: Literal["proportional"] = "proportional"
    method: str
    seed: int
    share: float = Field(ge=0, le=1)
    inputs: list[str]  # what the draw read; demand, locus or grounding must not be among them
    participants: dict[str, SampledParticipant]


class Manifest(_Model):
    format: Literal["companion-benchmark"] = FORMAT
    version: Literal[1] = VERSION
    recent_window: int = Field(ge=0)
    participants: list[ParticipantId]
    counts: dict[str, Counts] = {}
    sampling: Sampling | None = None  # releases from other tools (fixtures, converted corpora) lack it

    @model_validator(mode="after")
    def _consistent(self) -> "Manifest":
        dup = sorted({p for p in self.participants if self.participants.count(p) > 1})
        if dup:
            raise ValueError(f"participants listed twice: {dup}")
        stray = sorted(set(self.counts) - set(self.participants))
        if stray:  # most likely a typo in a participant id
            raise ValueError(f"counts for participants not listed: {stray}")
        return self


def _aware(v: str) -> str:
    try:
        t = datetime.fromisoformat(v)
    except ValueError as e:
        raise ValueError(f"not an ISO 8601 timestamp: {v!r}") from e
    if t.tzinfo is None:  # dayids are local calendar days: a naive time is ambiguous
        raise ValueError(f"timestamp {v!r} has no UTC offset")
    return v


# Kept verbatim (round trip); checked to be ISO 8601 with an offset.
Timestamp = Annotated[str, AfterValidator(_aware)]


class ConversationRow(_Model):
    dayid: DayId
    sender: Sender
    text: str
    ts: Timestamp


class ProfileClaim(_Model):
    id: str
    text: str
    category: str | None = None
    confidence: float | None = None
    valid_from: DayId | None = None
    valid_to: DayId | None = None
    source_dayids: list[DayId]
    verdict: Verdict


class Trait(_Model):
    value: Any
    strength: str | None = None
    evidence: list[DayId] = []


class Description(_Model):
    facet: str
    text: str
    evidence: list[DayId] = []


class Persona(_Model):
    big_five: dict[str, Trait] = {}
    slots: dict[str, Trait] = {}
    descriptions: list[Description] = []

    def evidence(self) -> list[tuple[str, str]]:
        """(field path, dayid) for every cited dayid, so a reader can check they resolve."""
        out = [(f"big_five.{k}.evidence", d) for k, t in self.big_five.items() for d in t.evidence]
        out += [(f"slots.{k}.evidence", d) for k, t in self.slots.items() for d in t.evidence]
        out += [(f"descriptions[{i}].evidence", d) for i, x in enumerate(self.descriptions) for d in x.evidence]
        return out


class ChatProbe(_Model):
    probe_dayid: DayId
    stratum: Stratum
    scoreable: bool
    locus: Locus
    locus_verified: Locus | None = None
    recent_context: list[DayId] = []
    episode_refs: list[DayId] = []
    profile_refs: list[str] = []  # claim ids (or dayids): not resolved against the conversation
    grounding_dayids: list[DayId]
    tier: Tier
    category: str | None = None
    referent_on_screen: OnScreen
    reference_reply: str | None = None
    trace: dict[str, Any] = {}
    # exported releases: pending (drawn, placeholders), not_needed (controls), done (annotated);
    # releases from other tools (fixtures, converted corpora) carry none
    annotation: Literal["pending", "not_needed", "done"] | None = None
    annotators: list[str] | None = None

    def _outside(self, conversation_index: Mapping[str, int], recent_window: int) -> list[bool]:
        """For each grounding dayid: does it lie before the recent window?"""
        try:
            p = conversation_index[self.probe_dayid]
            ords = [conversation_index[d] for d in self.grounding_dayids]
        except KeyError as e:
            raise ValueError(f"probe {self.probe_dayid}: dayid {e.args[0]!r} is not in the conversation") from None
        late = [d for d, o in zip(self.grounding_dayids, ords) if o >= p]
        if late:  # gold a system could not have seen: a broken release, not a judgment call
            raise ValueError(f"probe {self.probe_dayid}: grounding {late} does not precede the probe")
        # The recent window is the `recent_window` messages with ordinals p-w .. p-1.
        return [o < p - recent_window for o in ords]

    def memory_bearing(self, conversation_index: Mapping[str, int], recent_window: int, strict: bool = False) -> bool:
        """Needs the past: some verified grounding lies outside the recent window.

        `conversation_index` maps dayid -> ordinal (conversation file order). Under `strict`, a
        probe whose referent is clearly on screen does not count, whatever its grounding.
        """
        if strict and self.referent_on_screen == "clear":
            return False
        return any(self._outside(conversation_index, recent_window))

    def distant(self, conversation_index: Mapping[str, int], recent_window: int) -> bool:
        """Has grounding, and all of it lies outside the recent window (recency cannot answer it)."""
        outside = self._outside(conversation_index, recent_window)
        return bool(outside) and all(outside)


def _tag(v: str | None) -> str | None:
    from memory.feedback import tags  # versioned data: memory/data/feedback.json

    if v is not None and v not in tags():
        raise ValueError(f"unknown tag {v!r}: one of {', '.join(tags())} (or null)")
    return v


class FeedbackRow(_Model):
    """`feedback.jsonl` (optional): one rating of a companion reply, in the order given; a later
    row for the same reply replaces the earlier from then on, `none` retracts. No text."""
    dayid: DayId  # the companion message rated
    rating: Literal["up", "down", "none"]
    tag: Annotated[str | None, AfterValidator(_tag)] = None
    arm: str | None = None  # the trial arm that produced the reply (gate/retriever/policy)
    gate: str | None = None
    via: str | None = None  # app | cli
    at: Timestamp

    @model_validator(mode="after")
    def _retraction_untagged(self) -> "FeedbackRow":
        if self.rating == "none" and self.tag is not None:
            raise ValueError("a retraction (rating none) carries no tag")
        return self


class QAItem(_Model):
    id: str
    question: str
    answer: str
    category: str | int | None = None
    evidence_dayids: list[DayId]


def sampling_digest(dayids) -> str:
    """sha256 over the sorted drawn dayids: the exporter records it, the checker recomputes it."""
    return hashlib.sha256("\n".join(sorted(dayids)).encode()).hexdigest()


SAMPLING_METHOD = ("uniform draw without replacement of round(share x population) participant messages, "
                   "by a pseudo-random generator seeded with the seed and a participant key")
SAMPLING_INPUTS = ["seed", "participant key", "positions of the participant's messages", "share"]


def sampling_record(seed: int, share: float, drawn: dict[str, tuple[int, list[str]]]) -> dict:
    """The manifest's `sampling` entry: `drawn` maps participant id -> (population, drawn probe dayids)."""
    return Sampling(method=SAMPLING_METHOD, seed=seed, share=share, inputs=SAMPLING_INPUTS, participants={
        pid: SampledParticipant(population=n, drawn=len(ds), digest=sampling_digest(ds))
        for pid, (n, ds) in drawn.items()}).model_dump(mode="json")


def with_sampling(manifest: dict, files: dict[str, dict]) -> dict:
    """An exporter's manifest with its sampling record added (files: pid -> {"conversation", "chat_gold"})."""
    if "sampling" in manifest or "seed" not in manifest or "probe_share" not in manifest:
        return manifest
    return {**manifest, "sampling": sampling_record(manifest["seed"], manifest["probe_share"], {
        pid: (sum(r["sender"] == "user" for r in f["conversation"]),
              [g["probe_dayid"] for g in f.get("chat_gold") or [] if g["stratum"] == "proportional"])
        for pid, f in files.items()})}


# Annotation stages (docs/FORMAT.md): each finished probe's `trace` holds one entry per stage with
# the annotator's reasoning note, who confirmed it and which model (if any) drafted it.
STAGES = {"A": "what the probe points at", "B": "evidence checked against the source",
          "C": "tier and category, with the rule applied", "D": "reference reply from the recorded context only",
          "E": "final check"}


class _Stage(BaseModel):
    """What an annotator gives for one stage (consent.annotate): its fields and a reasoning note."""
    model_config = ConfigDict(extra="forbid")
    note: str = Field(min_length=1)

    @field_validator("note")
    @classmethod
    def _said(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a reasoning note is required")
        return v.strip()


class StageA(_Stage):
    locus: Locus


class StageB(_Stage):
    episode_refs: list[DayId] = []
    profile_refs: list[str] = []
    grounding_dayids: list[DayId] = []
    referent_on_screen: OnScreen


class StageC(_Stage):
    tier: Tier
    category: str = Field(min_length=1)
    rule: str = Field(min_length=1)  # which rule of the annotation guide decided the tier


class StageD(_Stage):
    reference_reply: str = Field(min_length=1, max_length=20_000)  # a message's length at most


class StageE(_Stage):
    scoreable: bool


STAGE_MODELS: dict[str, type[_Stage]] = {"A": StageA, "B": StageB, "C": StageC, "D": StageD, "E": StageE}
ProbeKey = Annotated[str, Field(pattern=r"^U\d{2,6}/day\d+-\d+$")]


class AnnotationRecord(_Model):
    """One line of `annotations/<annotator>.jsonl`: a stage's fields (checked by the stage's
    model) with who confirmed it, which model drafted it and when."""
    key: ProbeKey  # U01/day8-151
    stage: Literal["A", "B", "C", "D", "E"]
    note: str
    by: str | None  # the person who confirmed it (None: an unconfirmed model draft)
    drafted_by: str | None = None
    confirmed: bool
    at: Timestamp
    checks: str | list[str] | None = None  # stage E: "passed"

    @model_validator(mode="after")
    def _fits_its_stage(self) -> "AnnotationRecord":
        model = STAGE_MODELS[self.stage]
        fields = {k: v for k, v in (self.model_extra or {}).items()}
        stray = sorted(set(fields) - set(model.model_fields))
        if stray:
            raise ValueError(f"stage {self.stage} has no field(s) {stray}")
        model.model_validate({**fields, "note": self.note})
        if self.confirmed and not self.by:
            raise ValueError("a confirmed stage names who confirmed it ('by')")
        return self

    @classmethod
    def of(cls, key: str, stage: str, fields: _Stage, by: str | None, drafted_by: str | None, confirmed: bool,
           at: str, checks=None) -> "AnnotationRecord":
        data = fields.model_dump()
        note = data.pop("note")
        return cls(key=key, stage=stage, note=note, by=by, drafted_by=drafted_by, confirmed=confirmed, at=at,
                   **({"checks": checks} if checks is not None else {}), **data)


def describe(e: ValidationError) -> str:
    """A validation error in plain words, naming each field (and the value it got)."""
    parts = []
    for err in e.errors(include_url=False):
        name = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"]).lstrip(".")
        if err["type"] == "missing":
            parts.append(f"field '{name}' missing")
            continue
        msg = err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        if isinstance(got, (str, int, float, bool)) and str(got) not in msg:
            msg += f", got {got!r}"
        parts.append(f"field '{name}': {msg}" if name else msg)
    return "; ".join(parts)


def strings(obj, skip=("evidence",), where="") -> list[tuple[str, str]]:
    """(field path, string) for every string in a JSON value, except the fields named in `skip`
    (dayid lists, times) and what they hold."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k not in skip:
                out += strings(v, skip, f"{where}.{k}" if where else k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += strings(v, skip, f"{where}[{i}]")
    elif isinstance(obj, str):
        out.append((where, obj))
    return out
