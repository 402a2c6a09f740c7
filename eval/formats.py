"""The benchmark format's models live in consent.formats (the exporter, the release checker and
the annotator need them, and consent may not import eval); re-exported here for eval's readers
and for anyone who imported them from here."""

from consent.formats import (FORMAT, VERSION, ChatProbe, ConversationRow, Counts, DayId, Description,  # noqa: F401
                             FeedbackRow, Locus, Manifest, OnScreen, ParticipantId, Persona, ProfileClaim, QAItem,
                             Sampling, Sender, Stratum, Tier, Trait, Verdict)
