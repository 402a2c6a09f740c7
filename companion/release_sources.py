"""What a release carries beside the conversation: the derived memory, as profile.jsonl and
persona.json (the registry's `export_source` kind: pyproject.toml registers `derived_memory`).

Only a participant who consented to memory has derived memory; the export pseudonymizes the
texts with the same surrogates as the conversation, and its gates check every cited dayid.
"""

from __future__ import annotations

from consent import records as consent
from memory import extract, persona


def derived_memory(store, participant: str) -> tuple[list[dict], dict | None]:
    """Profile claims and the persona, for participants who consented to memory."""
    if not consent.status(store, participant).allows("memory"):
        return [], None
    return extract.profile_rows(store, participant), persona.persona(store, participant)
