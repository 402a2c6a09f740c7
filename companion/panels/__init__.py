"""The app's panels: each module builds one part of the page and wires its handlers, given the
shared session state and store (`common.Shared`). `companion.app.build` composes them in page
order; a panel that other parts extend (the chat's feedback, the researcher's trial results)
does so through one hook line in `build`.

- signin: sign-in, consent, and the account row (sign out, download my data, withdraw);
- chat: the conversation, streamed replies and the memory line under each;
- held_actions: actions waiting for approval, and the actions and outbox history;
- memory_inspector: "What I remember" (items with their sources, corrections, the memory document);
- research: the researcher page (traces, participants and consent), which holds
- trial_arms: assigning trial arms to participants (companion.trialpanel's results panel is
  hooked in under it).
"""
