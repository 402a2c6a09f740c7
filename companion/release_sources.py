"""What a release carries beside the conversation: the derived memory, as profile.jsonl and
persona.json (consent.export's `profile_source` hook; importing this module registers it once).

Only a participant who consented to memory has derived memory; the export pseudonymizes the
texts with the same surrogates as the conversation, and its gates check every cited dayid.
"""

from __future__ import annotations

from consent import export
from consent import records as consent
from memory import extract, persona


@export.profile_source
def derived_memory(store, participant: str) -> tuple[list[dict], dict | None]:
    if not consent.status(store, participant).allows("memory"):
        return [], None
    return extract.profile_rows(store, participant), persona.persona(store, participant)
