"""Sign-in and consent (the door to the chat), and the account row under the chat: sign out,
download my data, withdraw from the study, the time zone. Every event here may put another
participant (or none) on the page: `wire` returns those events for the other panels to follow.

Names are not case-sensitive ("Ana" signs in to "ana", and the page says so); reserved names
("researcher" and its look-alikes) take no new account. A new account gets the browser's time
zone (read by the page, `browser_zone`), which the participant can change under the chat.
"""

from __future__ import annotations

import json
import zoneinfo
from dataclasses import dataclass

import gradio as gr

from companion import auth, gate, warmup
from companion.markup import text as as_text
from companion.panels.chat import Chat, history
from companion.panels.common import Shared, client_address
from consent import access, downloads
from consent import records as consent
from memory import participants
from memory.keys import zone as check_zone
from memory.store import StoreError

ZONES = sorted(zoneinfo.available_timezones())
# The page fills a hidden box with the browser's IANA zone name as it loads.
BROWSER_ZONE_JS = "() => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { return ''; } }"


def zone_or_utc(tz) -> tuple[str, bool]:
    """(zone, whether it is the one given): an unknown or missing zone is UTC."""
    try:
        if isinstance(tz, str) and tz.strip():
            check_zone(tz.strip())
            return tz.strip(), True
    except (ValueError, KeyError):
        pass
    return "UTC", False


@dataclass
class Door:
    signin_box: gr.Column
    name: gr.Textbox
    passphrase: gr.Textbox
    signin_btn: gr.Button
    signin_msg: gr.Markdown
    consent_box: gr.Column
    accept_btn: gr.Button
    decline_btn: gr.Button
    browser_zone: gr.Textbox


@dataclass
class Account:
    signout: gr.Button
    download_btn: gr.Button
    withdraw_btn: gr.Button
    download_link: gr.Markdown
    withdraw_confirm: gr.Checkbox
    account_msg: gr.Markdown
    zone: gr.Dropdown
    zone_save: gr.Button


def build_door(sh: Shared) -> Door:
    text = consent.current()
    with gr.Column(visible=True) as signin_box:
        name = gr.Textbox(label="Name", elem_id="signin-name")
        passphrase = gr.Textbox(label="Passphrase", type="password", elem_id="signin-pass")
        signin_btn = gr.Button("Sign in", variant="primary", elem_id="signin-btn")
        signin_msg = gr.Markdown(elem_id="signin-msg")
    with gr.Column(visible=False) as consent_box:
        gr.Markdown(f"### Consent (version {text.version})\n\n{text.text}", elem_id="consent-text")
        with gr.Row():
            accept_btn = gr.Button("I accept", variant="primary", elem_id="consent-accept")
            decline_btn = gr.Button("I decline", elem_id="consent-decline")
    browser_zone = gr.Textbox(visible=False, elem_id="browser-tz")
    return Door(signin_box, name, passphrase, signin_btn, signin_msg, consent_box, accept_btn, decline_btn,
                browser_zone)


def build_account(sh: Shared) -> Account:
    with gr.Row():
        signout = gr.Button("Sign out", size="sm")
        download_btn = gr.Button("Download my data", size="sm", elem_id="download")
        withdraw_btn = gr.Button("Withdraw from the study", size="sm", variant="stop", elem_id="withdraw")
    download_link = gr.Markdown(elem_id="download-link")
    withdraw_confirm = gr.Checkbox(label="Yes, erase everything about me", value=False)
    with gr.Row():
        zone = gr.Dropdown(label="Your time zone (reminders are shown and delivered in it)", choices=ZONES,
                           value=None, elem_id="account-tz", scale=3)
        zone_save = gr.Button("Save time zone", size="sm", elem_id="account-tz-save", scale=1)
    account_msg = gr.Markdown(elem_id="account-msg")
    return Account(signout, download_btn, withdraw_btn, download_link, withdraw_confirm, account_msg, zone, zone_save)


def show(stage: str):
    return (gr.update(visible=stage == "signin"), gr.update(visible=stage == "consent"),
            gr.update(visible=stage == "chat"))


class SignIn:
    """The handlers; `outs` is what changes when the page shows another stage or participant."""

    def __init__(self, sh: Shared, door: Door, chat_box: gr.Column, chat: Chat):
        self.sh, self.door = sh, door
        self.outs = [sh.session, door.signin_box, door.consent_box, chat_box, chat.who, chat.chatbot,
                     door.signin_msg]

    def enter_chat(self, sess: dict, participant: str, uid: str, note: str = ""):
        gate.sign_in(self.sh.store, sess, participant, uid)
        warmup.read_ahead(self.sh.store, [participant])  # what their first recall question reads
        sess["pending"] = {}
        return (sess, *show("chat"), who_line(self.sh.store, participant, note), history(self.sh.store, participant),
                "")

    @gate.door
    def sign_in(self, n, p, sess: dict, tz: str | None = None, request: gr.Request = None):
        store, guard = self.sh.store, self.sh.guard
        n = (n or "").strip()
        address = client_address(request)
        blank = (sess, *show("signin"), gr.update(), gr.update(), "")
        sess["pending"] = {}
        try:
            participants.check_name(n)
        except StoreError as e:
            return (*blank[:-1], as_text(e))
        key = participants.name_key(n)  # one count per account, whatever the spelling
        wait = guard.blocked_for(key, address)
        if wait > 0:
            return (*blank[:-1], f"Too many failed sign-ins for {as_text(n)}; try again in {wait:.0f} s.")
        stored = participants.find(store, n)
        if stored is None:  # a new participant: nothing is stored until consent
            if participants.reserved(n):
                return (*blank[:-1], f"The name “{as_text(n)}” is reserved (it reads as the researcher or the "
                                     "system). Choose another name.")
            try:
                sess["pending"] = {"name": n, "pass_hash": auth.hash_passphrase(p or ""), "new": True,
                                   "tz": tz if isinstance(tz, str) else ""}
            except ValueError as e:
                return (*blank[:-1], as_text(e))
            return (sess, *show("consent"), gr.update(), gr.update(), "")
        record = participants.get(store, stored)
        if not auth.verify(p or "", record["pass_hash"]):
            guard.failed(key, address)
            return (*blank[:-1], "Name or passphrase is wrong.")
        guard.succeeded(key, address)
        note = case_note(n, stored)
        if not consent.status(store, stored).accepted:
            sess["pending"] = {"name": stored, "verified": (record["uid"], record["pass_hash"]), "note": note}
            return (sess, *show("consent"), gr.update(), gr.update(), note)
        return self.enter_chat(sess, stored, record["uid"], note)

    @gate.door
    def accept(self, sess: dict):
        store = self.sh.store
        pend = sess["pending"]
        if not pend:
            return (sess, *show("signin"), gr.update(), gr.update(), "Sign in first.")
        sess["pending"] = {}
        name, note = pend["name"], pend.get("note", "")
        try:
            if pend.get("new"):
                tz, given = zone_or_utc(pend.get("tz"))
                consent.accept(store, name, pass_hash=pend["pass_hash"], new=True, tz=tz)
                note = (f"Your time zone is {tz} (from your browser)" if given else
                        "Your browser did not say its time zone, so it is UTC") + \
                    ": reminders are shown and delivered in it; change it under the chat."
            else:
                consent.accept(store, name, verified=tuple(pend["verified"]))
        except StoreError as e:  # the name was taken, or the account changed, since sign-in
            return (sess, *show("signin"), gr.update(), gr.update(), as_text(e))
        return self.enter_chat(sess, name, participants.uid(store, name), note)

    @gate.door
    def decline(self, sess: dict):
        sess["pending"] = {}
        return (sess, *show("signin"), gr.update(), gr.update(),
                "You declined: nothing about you was stored.")

    @gate.door
    def sign_out(self, sess: dict):
        gate.sign_out(self.sh.store, sess)
        return (sess, *show("signin"), "", [], "Signed out.", "", "")

    @gate.participant
    def my_data(self, sess: dict):
        store = self.sh.store
        participant = self.sh.require(sess)
        token = downloads.stage(store.data_dir, participant, f"{participant}.json",
                                json.dumps(access.download(store, participant), ensure_ascii=False, indent=1))
        return (f"[Download your data (JSON)](download/{token}): the link works once, for "
                f"{downloads.TTL_SECONDS / 60:.0f} minutes, and only until you withdraw.")

    @gate.participant
    def withdraw(self, confirmed: bool, sess: dict):
        participant = self.sh.require(sess)
        if not confirmed:
            return (sess, *show("chat"), gr.update(), gr.update(), "",
                    "Tick “Yes, erase everything about me” first.", gr.update(), gr.update())
        erased = consent.withdraw(self.sh.store, participant)  # ends this account's sessions everywhere
        gate.sign_out(self.sh.store, sess)
        return (sess, *show("signin"), "", [], as_text(erased.message()), "", "", "")

    @gate.participant
    def set_zone(self, tz, sess: dict):
        participant = self.sh.require(sess)
        if not isinstance(tz, str) or tz not in ZONES:
            return f"Choose a time zone from the list (got {as_text(tz)})."
        participants.set_tz(self.sh.store, participant, tz)
        return f"Your time zone is now {as_text(tz)}: reminders are shown and delivered in it."

    def wire_door(self) -> list:
        """Sign-in and consent; returns the events after which another participant is on the page."""
        d, s, outs = self.door, self.sh.session, self.outs
        ins = [d.name, d.passphrase, s, d.browser_zone]
        switched = [d.signin_btn.click(self.sign_in, ins, outs),
                    d.passphrase.submit(self.sign_in, ins, outs),
                    d.accept_btn.click(self.accept, [s], outs)]
        d.decline_btn.click(self.decline, [s], outs)
        return switched

    def wire_account(self, a: Account) -> list:
        """Sign out, download, withdraw; returns the events after which nobody is on the page."""
        d, s, outs = self.door, self.sh.session, self.outs
        # signing out or withdrawing also empties the sign-in form (name and passphrase)
        switched = [a.signout.click(self.sign_out, [s], outs + [d.name, d.passphrase])]
        a.download_btn.click(self.my_data, [s], [a.download_link])
        switched.append(a.withdraw_btn.click(self.withdraw, [a.withdraw_confirm, s],
                                             outs + [a.account_msg, d.name, d.passphrase]))
        a.zone_save.click(self.set_zone, [a.zone, s], [a.account_msg])
        return switched


def who_line(store, participant: str, note: str = "") -> str:
    record = participants.get(store, participant) or {}
    line = f"Signed in as **{as_text(participant)}** · time zone {as_text(record.get('tz', '?'))}"
    return line + (f"  \n{note}" if note else "")


def case_note(given: str, stored: str) -> str:
    """Said when the name was typed in another case than the account's."""
    if given == stored:
        return ""
    return (f"Names are not case-sensitive: “{as_text(given)}” is the account “{as_text(stored)}”.")


def zone_of(store, participant: str | None):
    """The account's zone for the account panel (no value when no one is signed in)."""
    if not participant:
        return gr.update(value=None)
    return gr.update(value=(participants.get(store, participant) or {}).get("tz"))
