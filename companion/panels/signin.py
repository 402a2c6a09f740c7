"""Sign-in and consent (the door to the chat), and the account row under the chat: sign out,
download my data, withdraw from the study. Every event here may put another participant (or
none) on the page: `wire` returns those events for the other panels to follow."""

from __future__ import annotations

import json
from dataclasses import dataclass

import gradio as gr

from companion import auth
from companion.markup import text as as_text
from companion.panels.chat import Chat, history
from companion.panels.common import Shared, client_address, new_session
from consent import access, downloads
from consent import records as consent
from memory import participants
from memory.store import StoreError


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


@dataclass
class Account:
    signout: gr.Button
    download_btn: gr.Button
    withdraw_btn: gr.Button
    download_link: gr.Markdown
    withdraw_confirm: gr.Checkbox
    account_msg: gr.Markdown


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
    return Door(signin_box, name, passphrase, signin_btn, signin_msg, consent_box, accept_btn, decline_btn)


def build_account(sh: Shared) -> Account:
    with gr.Row():
        signout = gr.Button("Sign out", size="sm")
        download_btn = gr.Button("Download my data", size="sm", elem_id="download")
        withdraw_btn = gr.Button("Withdraw from the study", size="sm", variant="stop", elem_id="withdraw")
    download_link = gr.Markdown(elem_id="download-link")
    withdraw_confirm = gr.Checkbox(label="Yes, erase everything about me", value=False)
    account_msg = gr.Markdown(elem_id="account-msg")
    return Account(signout, download_btn, withdraw_btn, download_link, withdraw_confirm, account_msg)


def show(stage: str):
    return (gr.update(visible=stage == "signin"), gr.update(visible=stage == "consent"),
            gr.update(visible=stage == "chat"))


class SignIn:
    """The handlers; `outs` is what changes when the page shows another stage or participant."""

    def __init__(self, sh: Shared, door: Door, chat_box: gr.Column, chat: Chat):
        self.sh, self.door = sh, door
        self.outs = [sh.session, door.signin_box, door.consent_box, chat_box, chat.who, chat.chatbot,
                     door.signin_msg]

    def enter_chat(self, sess: dict, participant: str, uid: str):
        sess["participant"], sess["uid"], sess["pending"] = participant, uid, {}
        return (sess, *show("chat"), f"Signed in as **{as_text(participant)}**", history(self.sh.store, participant),
                "")

    def sign_in(self, n, p, sess: dict, request: gr.Request):
        store, guard = self.sh.store, self.sh.guard
        n = (n or "").strip()
        address = client_address(request)
        blank = (sess, *show("signin"), gr.update(), gr.update(), "")
        sess["pending"] = {}
        try:
            participants.check_name(n)
        except StoreError as e:
            return (*blank[:-1], str(e))
        wait = guard.blocked_for(n, address)
        if wait > 0:
            return (*blank[:-1], f"Too many failed sign-ins for {n}; try again in {wait:.0f} s.")
        record = participants.get(store, n)
        if record is None:  # a new participant: nothing is stored until consent
            try:
                sess["pending"] = {"name": n, "pass_hash": auth.hash_passphrase(p or ""), "new": True}
            except ValueError as e:
                return (*blank[:-1], str(e))
            return (sess, *show("consent"), gr.update(), gr.update(), "")
        if not auth.verify(p or "", record["pass_hash"]):
            guard.failed(n, address)
            return (*blank[:-1], "Name or passphrase is wrong.")
        guard.succeeded(n, address)
        if not consent.status(store, n).accepted:
            sess["pending"] = {"name": n, "verified": (record["uid"], record["pass_hash"])}
            return (sess, *show("consent"), gr.update(), gr.update(), "")
        return self.enter_chat(sess, n, record["uid"])

    def accept(self, sess: dict):
        store = self.sh.store
        pend = sess["pending"]
        if not pend:
            return (sess, *show("signin"), gr.update(), gr.update(), "Sign in first.")
        sess["pending"] = {}
        name = pend["name"]
        try:
            if pend.get("new"):
                consent.accept(store, name, pass_hash=pend["pass_hash"], new=True)
            else:
                consent.accept(store, name, verified=tuple(pend["verified"]))
        except StoreError as e:  # the name was taken, or the account changed, since sign-in
            return (sess, *show("signin"), gr.update(), gr.update(), str(e))
        return self.enter_chat(sess, name, participants.uid(store, name))

    def decline(self, sess: dict):
        sess["pending"] = {}
        return (sess, *show("signin"), gr.update(), gr.update(),
                "You declined: nothing about you was stored.")

    def sign_out(self, sess: dict):
        sess.update(new_session(), researcher=sess.get("researcher", False))
        return (sess, *show("signin"), "", [], "Signed out.", "", "")

    def my_data(self, sess: dict):
        store = self.sh.store
        participant = self.sh.require(sess)
        token = downloads.stage(store.data_dir, participant, f"{participant}.json",
                                json.dumps(access.download(store, participant), ensure_ascii=False, indent=1))
        return (f"[Download your data (JSON)](download/{token}): the link works once, for "
                f"{downloads.TTL_SECONDS / 60:.0f} minutes, and only until you withdraw.")

    def withdraw(self, confirmed: bool, sess: dict):
        participant = self.sh.require(sess)
        if not confirmed:
            return (sess, *show("chat"), gr.update(), gr.update(), "",
                    "Tick “Yes, erase everything about me” first.", gr.update(), gr.update())
        erased = consent.withdraw(self.sh.store, participant)
        sess.update(new_session(), researcher=sess.get("researcher", False))
        return (sess, *show("signin"), "", [], erased.message(), "", "", "")

    def wire_door(self) -> list:
        """Sign-in and consent; returns the events after which another participant is on the page."""
        d, s, outs = self.door, self.sh.session, self.outs
        switched = [d.signin_btn.click(self.sign_in, [d.name, d.passphrase, s], outs),
                    d.passphrase.submit(self.sign_in, [d.name, d.passphrase, s], outs),
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
        return switched
