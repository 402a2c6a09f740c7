"""The `companion` command. Every command takes --data-dir (env COMPANION_HOME)."""

from __future__ import annotations

import functools
import json
import sys
import threading

import click

import companion  # noqa: F401  (no-telemetry environment first)
from companion import settings as settings_mod
from memory.store import Store, StoreError


def common(fn):
    """--data-dir and --model on every command; builds Settings and the Store."""

    @click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
                  help="Data directory (default: $COMPANION_HOME or ~/.companion).")
    @functools.wraps(fn)
    def wrapper(*args, data_dir=None, **kwargs):
        s = settings_mod.load(home=data_dir)
        kwargs["settings"] = s
        return fn(*args, **kwargs)

    return wrapper


def plugin_options(fn):
    """--gate, --retriever, --policy: registered plugins chosen by name."""
    for kind in ("policy", "retriever", "gate"):
        fn = click.option(f"--{kind}", default=None, help=f"A registered {kind}, by name (see `companion plugins`).")(fn)
    return fn


def with_plugins(settings, **chosen):
    from memory import registry

    for kind in ("gate", "retriever", "policy"):
        if chosen.get(kind):
            try:
                registry.get(kind, chosen[kind])
            except LookupError as e:
                fail(str(e))
    return settings.model_copy(update={k: v for k, v in chosen.items() if v})


def open_store(s) -> Store:
    return Store(s.data_dir)


def fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


# ---------------------------------------------------------------- who may run a command
#
# A command that reads or writes one participant needs that participant's own passphrase
# (--passphrase, env COMPANION_PASSPHRASE) or the researcher credential of the data directory
# (--researcher-password, env COMPANION_RESEARCHER_PASSWORD, checked against the scrypt hash
# that `companion researcher set-password` stores in the data directory). A command over every
# participant, or a researcher operation (trials, export, audit, sweep), needs the researcher
# credential as soon as any participant has a passphrase.
# Participants created without a passphrase (`consent accept` without one, corpus ingest) stay
# open to whoever can run the CLI on the data directory: they were made by that operator, there
# is no secret of theirs to check, and they cannot sign in to the app (no passphrase matches).
# Failed checks are rate-limited per name across processes (auth.FileRateLimiter, a file next
# to the database). The CLI check guards the CLI; the data directory's file permissions remain
# what keeps a local user from opening the SQLite file directly.

FAILURES_FILE = "auth-failures.json"


def _limiter(settings):
    from companion import auth

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return auth.FileRateLimiter(settings.data_dir / FAILURES_FILE)


def _check_researcher(settings, password: str) -> None:
    from companion import auth

    stored = auth.researcher_hash(settings.data_dir)
    if stored is None:
        fail("no researcher password is set for this data directory: set one with "
             "`companion researcher set-password`")
    limiter = _limiter(settings)
    wait = limiter.blocked_for("researcher")
    if wait > 0:
        fail(f"too many failed researcher password checks; try again in {wait:.0f} s")
    if not auth.verify(password, stored):
        limiter.failed("researcher")
        fail("wrong researcher password")
    limiter.succeeded("researcher")


def check_participant(settings, participant, passphrase=None, researcher_password=None) -> dict | None:
    """Let the command go on, or fail: see the comment above. Returns the participant's row as
    it was when checked (None: no such participant), for a caller that must act on exactly it."""
    from companion import auth
    from memory import participants

    store = open_store(settings)
    try:
        record = participants.get(store, participant)
    finally:
        store.close()
    if researcher_password:
        _check_researcher(settings, researcher_password)
        return record
    if record is None or not record["pass_hash"]:
        return record  # unknown: the command says so; no passphrase: open (see above)
    if not passphrase:
        fail(f"{participant!r} has a passphrase: give it with --passphrase or COMPANION_PASSPHRASE "
             "(or use --researcher-password)")
    limiter = _limiter(settings)
    wait = limiter.blocked_for(participant)
    if wait > 0:
        fail(f"too many failed passphrase checks for {participant!r}; try again in {wait:.0f} s")
    if not auth.verify(passphrase, record["pass_hash"]):
        limiter.failed(participant)
        fail(f"wrong passphrase for {participant!r}")
    limiter.succeeded(participant)
    return record


def check_researcher(settings, researcher_password=None) -> None:
    if researcher_password:
        _check_researcher(settings, researcher_password)
        return
    store = open_store(settings)
    try:
        protected = store.conn.execute(
            "SELECT count(*) FROM participants WHERE pass_hash IS NOT NULL").fetchone()[0]
    finally:
        store.close()
    if protected:
        fail("this command reaches participants who have a passphrase: it needs the researcher "
             "credential (--researcher-password or COMPANION_RESEARCHER_PASSWORD)")


def guarded(scope: str):
    """Put under @common. scope "participant": the --participant's own passphrase or the
    researcher credential (without --participant, as "researcher"); "participant-if-named":
    the same, but no check without --participant; "researcher": the researcher credential.
    Adds --passphrase (the participant scopes) and --researcher-password."""

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, passphrase=None, researcher_password=None, **kwargs):
            s = kwargs["settings"]
            if scope in ("participant", "participant-if-named") and kwargs.get("participant"):
                check_participant(s, kwargs["participant"], passphrase, researcher_password)
            elif scope == "participant-if-named":
                pass  # nothing of anyone's (e.g. `consent show` without -p: the consent text)
            else:
                check_researcher(s, researcher_password)
            return fn(*args, **kwargs)

        wrapper = click.option(
            "--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
            default=None, help="The researcher credential (env COMPANION_RESEARCHER_PASSWORD).")(wrapper)
        if scope != "researcher":
            wrapper = click.option(
                "--passphrase", envvar="COMPANION_PASSPHRASE", default=None,
                help="The participant's own passphrase (env COMPANION_PASSPHRASE).")(wrapper)
        return wrapper

    return deco


class _Main(click.Group):
    """The top-level group; other packages' commands (eval's `eval` and `gates`) join through
    the `companion.commands` entry points when a command is looked up, not at import time."""

    _plugins_loaded = False

    def _load_plugins(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from importlib.metadata import entry_points

            for ep in entry_points(group="companion.commands"):
                if ep.name not in self.commands:
                    self.add_command(ep.load(), ep.name)

    def list_commands(self, ctx):
        self._load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._load_plugins()
        return super().get_command(ctx, name)


@click.group(cls=_Main)
@click.version_option(companion.__version__)
def main():
    """A local-first chat companion with instrumented memory."""


@main.command()
@click.option("--participant", "-p", required=True)
@click.option("--context", type=click.Choice(["work", "personal"]), default="personal", show_default=True)
@click.option("--model", default=None, help="Any litellm model string, or `echo` (default: embedded SmolLM2).")
@plugin_options
@common
@guarded("participant")
def chat(participant, context, model, gate, retriever, policy, settings):
    """Chat as PARTICIPANT. At a terminal it is interactive; otherwise one message a line."""
    from companion.turn import turn
    from consent import records as consent

    settings = with_plugins(settings, model=model, gate=gate, retriever=retriever, policy=policy)
    store = open_store(settings)
    state = consent.status(store, participant)
    if not state.accepted:
        fail(consent.refusal(participant, state))
    interactive = _is_terminal()
    # Undecodable input must reach the message check (which refuses it by name), not crash input().
    sys.stdin.reconfigure(errors="surrogateescape")
    if interactive:
        click.echo(f"Chatting as {participant} ({context}) with {settings.model}. Type quit or exit "
                   "(or Ctrl-D) to stop.")
    taken = refused = 0  # a script whose every line was refused must not look like success
    first = True
    while True:
        try:
            line = input("you> " if interactive else "")
        except EOFError:
            break
        if not line.strip():
            if interactive:
                continue
            click.echo("error: empty message skipped", err=True)
            refused += 1
            continue
        if interactive and line.strip().lower() in LEAVE_WORDS:
            break  # at a terminal these leave; a script's lines are all messages
        if first:
            # The first turn loads the embedding model and, for the embedded default, the chat model:
            # say so (on stderr, so a script's stdout stays one reply a line).
            first = False
            click.echo(f"(loading the memory index and the model {settings.model} for the first reply; "
                       "this can take a while)", err=True)
        streamed: list[str] = []
        if interactive:
            click.echo("companion> ", nl=False)

            def on_token(piece: str) -> None:
                streamed.append(piece)
                click.echo(piece, nl=False)
        else:
            on_token = None
        try:
            result = turn(store, participant, line, context=context, settings=settings, on_token=on_token)
        except (StoreError, ValueError) as e:
            click.echo(f"error: {e}", err=True)
            refused += 1
            continue
        taken += 1
        if interactive:
            said = "".join(streamed).strip()
            if not result.reply or not said:
                click.echo(f"\r{result.shown}")
            elif result.shown.startswith(said):  # the wrapper added to the model's words
                click.echo(result.shown[len(said):])
            else:  # the wrapper reshaped them (questions deferred, topics grouped ...)
                click.echo(f"\n(as delivered)\n{result.shown}")
        else:
            click.echo(one_line(result.shown))
            sys.stdout.flush()
    if refused and not taken:
        fail(f"none of the {refused} message{'s' if refused != 1 else ''} was taken")


LEAVE_WORDS = {"quit", "exit", "/quit", "/exit", ":q"}


def _is_terminal() -> bool:
    return sys.stdin.isatty()


def one_line(text: str) -> str:
    """A reply as one line of a scripted chat: backslashes and line breaks escaped (\\, \\n), so a
    reader splits replies on newlines and gets paragraphs back by unescaping."""
    return text.replace("\\", "\\\\").replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")


@main.group()
def consent():
    """Read, accept or withdraw consent."""


@consent.command("show")
@click.option("--participant", "-p", default=None)
@common
@guarded("participant-if-named")
def consent_show(participant, settings):
    """Print the current consent text and its scopes; with -p, also that participant's consent state."""
    from consent import records

    cur = records.current()
    click.echo(f"Consent version {cur.version}; scopes: {', '.join(cur.scopes)}\n")
    click.echo(cur.text)
    if participant:
        st = records.status(open_store(settings), participant)
        state = "accepted" if st.accepted else ("re-consent needed" if st.needs_reconsent else "not given")
        click.echo(f"\n{participant}: {state}" + (f" (version {st.version}, scopes {', '.join(st.scopes)})" if st.version else ""))


@consent.command("accept")
@click.option("--participant", "-p", required=True)
@click.option("--scopes", default=None, help="Comma-separated scopes (default: all of the current text).")
@click.option("--tz", default=None, help="IANA time zone for day boundaries (default: the machine's).")
@click.option("--passphrase", envvar="COMPANION_PASSPHRASE", default=None,
              help="Passphrase for signing in to the app (env COMPANION_PASSPHRASE).")
@click.option("--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
              default=None, help="The researcher credential (env COMPANION_RESEARCHER_PASSWORD).")
@common
def consent_accept(participant, scopes, tz, passphrase, researcher_password, settings):
    from companion import auth
    from consent import records

    # Consent goes to exactly the account that was checked: a name created by someone else
    # after the check (a sign-up in the app) is refused, not joined.
    checked = check_participant(settings, participant, passphrase, researcher_password)
    store = open_store(settings)
    try:
        pass_hash = auth.hash_passphrase(passphrase) if passphrase else None
        st = records.accept(store, participant,
                            scopes=tuple(s.strip() for s in scopes.split(",")) if scopes else None,
                            pass_hash=pass_hash, tz=tz, new=checked is None,
                            verified=None if checked is None else (checked["uid"], checked["pass_hash"]))
    except (StoreError, ValueError) as e:
        fail(str(e))
    click.echo(f"{participant}: consent version {st.version} accepted (scopes: {', '.join(st.scopes)})")


@consent.command("withdraw")
@click.option("--participant", "-p", required=True)
@click.option("--scope", default=None,
              help="Withdraw only this scope (e.g. export) and keep chatting; without it, withdraw "
                   "entirely and erase the participant everywhere.")
@click.option("--json", "as_json", is_flag=True, help="Print the erasure report as JSON.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (for scripts).")
@common
@guarded("participant")
def consent_withdraw(participant, scope, as_json, yes, settings):
    """Withdraw PARTICIPANT's consent. Without --scope this erases everything stored about them,
    everywhere, and cannot be undone: it asks first unless --yes is given."""
    from consent import records

    store = open_store(settings)
    if not scope and not yes:
        _memory_participant(store, participant, need_consent=False)  # an unknown name fails before asking
        if not click.confirm(f"Erase everything stored about {participant} (messages, memory, traces, "
                             "actions)? This cannot be undone", default=False, err=True):
            fail("nothing was erased")
    try:
        if scope:
            st = records.withdraw_scope(store, participant, scope.strip())
            click.echo(f"{participant}: scope {scope} withdrawn; remaining scopes: {', '.join(st.scopes) or 'none'}")
            return
        report = records.withdraw(store, participant)
    except StoreError as e:
        fail(str(e))
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=1))
    else:
        click.echo(f"{participant}: consent withdrawn; nothing more will be stored.")
        click.echo(report.message())


@consent.command("download")
@click.option("--participant", "-p", required=True)
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="File to write (JSON); '-' prints it.")
@common
@guarded("participant")
def consent_download(participant, out, settings):
    """All the participant's data as one JSON file."""
    from consent import access

    store = open_store(settings)
    try:
        data = access.download(store, participant)
    except StoreError as e:
        fail(str(e))
    text = json.dumps(data, ensure_ascii=False, indent=1)
    if out == "-":
        click.echo(text)
        return
    from pathlib import Path

    Path(out).write_text(text + "\n", encoding="utf-8")
    click.echo(f"{participant}: {len(data['messages'])} messages, {len(data['traces'])} traces written to {out}",
               err=True)


@consent.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("researcher")
def consent_list(as_json, settings):
    """Every participant with their consent state (the researcher's view)."""
    from consent import access

    rows = access.participants_view(open_store(settings))
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    for r in rows:
        click.echo(f"{r['participant']:<16} {r['consent']:<18} v{r['version'] or '-':<3} "
                   f"scopes={','.join(r['scopes']) or '-':<22} messages={r['messages']}")


@consent.command("audit")
@click.option("--participant", "-p", default=None, help="Only this participant's events.")
@click.option("--limit", type=int, default=None)
@common
@guarded("participant")
def consent_audit(participant, limit, settings):
    """The consent audit log (no names, no text), one JSON object a line."""
    from consent import audit

    for e in audit.events(open_store(settings), participant=participant, limit=limit):
        click.echo(json.dumps(e))


@consent.command("sweep")
@click.option("--older-than-days", type=float, required=True,
              help="Delete messages and traces older than this many days.")
@common
@guarded("researcher")
def consent_sweep(older_than_days, settings):
    """Run the retention sweep once (the app also schedules it)."""
    from consent import retention

    try:
        r = retention.sweep(open_store(settings), older_than_days)
    except ValueError as e:
        fail(str(e))
    click.echo(f"retention sweep (before {r['cutoff']}): {r['total']['messages']} messages, "
               f"{r['total']['traces']} traces removed")


@main.command("export")
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="Release folder to write (benchmark format).")
@click.option("--participants", default=None,
              help="Comma-separated participants (default: everyone who consented to export).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the probe sample and the surrogates.")
@click.option("--deny-list", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Researcher-supplied identifiers, one a line (optionally KIND<TAB>term).")
@click.option("--recent-window", type=int, default=None, help="Default: the configured recent window.")
@click.option("--probe-share", type=float, default=0.1, show_default=True,
              help="Share of participant messages drawn (blind to need) as proportional probes.")
@click.option("--overwrite", is_flag=True, help="Replace an earlier release at --out.")
@click.option("--reissue", default=None, metavar="RELEASE",
              help="Write RELEASE again to --out without the participants who withdrew since (same U-numbers).")
@click.option("--ledger", "show_ledger", is_flag=True, help="List every release: folder, state, U-numbers.")
@click.option("--recalls", is_flag=True, help="List releases holding someone who has withdrawn since.")
@common
@guarded("researcher")
def export_cmd(out, participants, seed, deny_list, recent_window, probe_share, overwrite, reissue, show_ledger,
               recalls, settings):
    """Write an anonymized release for participants who consented to export; refuse it if a gate fails."""
    import companion.release_sources  # noqa: F401  (profile.jsonl and persona.json from derived memory)
    from consent import export as exporter
    from consent import ledger

    if show_ledger or recalls:
        if out or reissue:
            fail("--ledger and --recalls only list; do not combine them with --out or --reissue")
        store = open_store(settings)
        if show_ledger:
            for r in ledger.releases(store.conn):
                who = ", ".join(m["pseudonym"] + (" (withdrawn)" if m["withdrawn_at"] else "") for m in r["members"])
                again = f", re-issue of {r['reissue_of']}" if r["reissue_of"] else ""
                click.echo(f"{r['release']}  {r['created_at'][:16]}  {r['state']}{again}  {r['folder']}  [{who}]")
        if recalls:
            todo = ledger.recalls(store, exporter.eligible(store))
            for r in todo:
                click.echo(f"recall {r['release']} at {r['folder']}: withdrawn {', '.join(r['withdrawn'])}; "
                           f"re-issue with: companion export --reissue {r['release']} --out NEW_DIR")
            if not todo:
                click.echo("no release holds anyone who has withdrawn")
        return
    if not out:
        fail("--out is required to write a release")
    names = [p.strip() for p in participants.split(",") if p.strip()] if participants else None
    try:
        r = exporter.export(open_store(settings), out, names, seed=seed, deny_list=deny_list,
                            recent_window=settings.recent_window if recent_window is None else recent_window,
                            probe_share=probe_share, overwrite=overwrite, reissue=reissue)
    except exporter.ReleaseRefused as e:
        fail(str(e))
    except (StoreError, FileExistsError, ValueError) as e:
        fail(str(e))
    for path in r["cleaned"]:
        click.echo(f"removed {path}: an unfinished export's staging folder (it never passed the gates)")
    for pid, c in r["participants"].items():
        click.echo(f"{pid}: {c['messages']} messages, {c['chat_rows']} probe candidates, {c['claims']} claims")
    again = f" (re-issue of {r['reissue_of']})" if r["reissue_of"] else ""
    click.echo(f"release {r['release']}{again} written to {r['path']} ({r['surrogates']} surrogates, "
               "map kept in the database)")


@main.command("messages")
@click.option("--participant", "-p", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def messages_cmd(participant, as_json, settings):
    """The participant's messages, oldest first."""
    from memory import messages, participants

    store = open_store(settings)
    if not participants.exists(store, participant):
        fail(f"unknown participant {participant!r}")
    rows = messages.read(store, participant, messages.next_ordinal(store, participant))
    if as_json:
        click.echo(json.dumps([m.public() for m in rows], ensure_ascii=False, indent=1))
    else:
        for m in rows:
            click.echo(f"{m.dayid:>10}  {m.sender:<9} {m.text}")


@main.group("actions")
def actions_group():
    """The participant's actions: held ones wait for approval; nothing is ever sent off the machine."""


@actions_group.command("list")
@click.option("--participant", "-p", required=True)
@click.option("--all", "show_all", is_flag=True, help="Everything, not only what waits for approval.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def actions_list(participant, show_all, as_json, settings):
    """Held actions (or all of them, with --all): id, status, what it does."""
    from companion import actions

    store = open_store(settings)
    _memory_participant(store, participant, need_consent=False)  # names an unknown participant
    rows = actions.history(store, participant) if show_all else actions.pending(store, participant)
    number = _numbers(store, participant)
    if as_json:
        click.echo(json.dumps([{**a.public(), "number": number.get(a.id)} for a in rows], ensure_ascii=False,
                              indent=1))
        return
    if not rows:
        click.echo(f"No actions for {participant} yet." if show_all else
                   f"Nothing waits for {participant}'s approval." + ("" if show_all else " (--all lists everything)"))
        return
    width = max(1, *(len(str(number.get(a.id, "-"))) for a in rows))
    click.echo(f"{'#':>{width}}  {'status':<14} {'context':<8} action")
    for a in rows:
        click.echo(f"{number.get(a.id, '-'):>{width}}  {a.status:<14} {a.context:<8} {a.summary}")


def _numbers(store, participant: str) -> dict[int, int]:
    """Action id -> the participant's own number for it: 1, 2, 3 ... over the actions they could
    see, so dropped ones (never shown) leave no gaps and nobody else's actions count."""
    from companion import actions

    shown = [a.id for a in actions.history(store, participant) if a.status != "dropped"]
    return {aid: n for n, aid in enumerate(sorted(shown), 1)}


def _resolve_cmd(approve: bool):
    @click.argument("number", type=int)
    @click.option("--participant", "-p", required=True)
    @click.option("--id", "by_id", is_flag=True, help="NUMBER is the stored id (`id` in --json), not the # listed.")
    @common
    @guarded("participant")
    def cmd(number, participant, by_id, settings):
        from companion import actions

        store = open_store(settings)
        if by_id:
            action_id = number
        else:
            ids = {n: aid for aid, n in _numbers(store, participant).items()}
            if number not in ids:
                fail(f"no action #{number} for {participant}: `companion actions list -p {participant} --all` "
                     "lists them")
            action_id = ids[number]
        try:
            row = (actions.approve if approve else actions.reject)(store, participant, action_id, via="cli")
        except actions.ActionError as e:
            fail(str(e))
        click.echo(f"{row.status}: {row.summary}")

    cmd.__doc__ = ("Approve held action NUMBER (the # in `actions list`): it runs now." if approve else
                   "Reject held action NUMBER (the # in `actions list`): it never runs.")
    return cmd


actions_group.command("approve")(_resolve_cmd(True))
actions_group.command("reject")(_resolve_cmd(False))


@main.command("traces")
@click.option("--participant", "-p", default=None)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
@common
@guarded("participant")
def traces_cmd(participant, as_json, settings):
    """Every turn's trace: gate, decision, hits, what was applied, model, latency, errors."""
    from memory import traces

    rows = traces.list_(open_store(settings), participant=participant)
    if as_json:
        click.echo(json.dumps([t.model_dump() for t in rows], ensure_ascii=False, indent=1))
    else:
        for t in rows:
            d = t.decision or {}
            click.echo(f"{t.participant} {t.dayid}: {t.gate.get('name')} retrieve={d.get('retrieve')} "
                       f"score={d.get('score')} hits={[h['dayid'] for h in t.hits]} errors={len(t.errors)}")


@main.command()
@common
def plugins(settings):
    """Every registered gate, retriever, policy and model backend, by name."""
    from memory import registry

    kinds = ("gate", "retriever", "policy", "model")
    names = {kind: registry.names(kind) for kind in kinds}
    # One width for every section, from the longest name, so a name never runs into its description.
    width = max(len(n) for ns in names.values() for n in ns) + 2
    for kind in kinds:
        rows = []
        for name in names[kind]:
            obj = registry.get(kind, name)
            doc = (obj.__doc__ or "").strip().splitlines()
            tag = " (eval only)" if getattr(obj, "eval_only", False) else ""
            rows.append(f"  {name:<{width}}{doc[0].strip() if doc else ''}{tag}".rstrip())
        click.echo(f"{kind.replace('policy', 'policie')}s:\n" + "\n".join(rows))


@main.group()
def trial():
    """Live gate trials: fix an arm per participant, or randomize per turn with a seed."""


@trial.command("set")
@click.option("--participant", "-p", required=True)
@click.option("--gate", required=True)
@click.option("--retriever", default=None, help="Default: the configured retriever.")
@click.option("--policy", default=None, help="Default: the configured policy.")
@common
@guarded("researcher")
def trial_set(participant, gate, retriever, policy, settings):
    from companion import trials

    try:
        trials.set_arm(open_store(settings), participant, gate, retriever or settings.retriever,
                       policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: every turn runs gate {gate}")


@trial.command("randomize")
@click.option("--participant", "-p", required=True)
@click.option("--gates", required=True, help="Comma-separated gate names, e.g. lexical,dense,never.")
@click.option("--seed", type=int, required=True)
@click.option("--retriever", default=None)
@click.option("--policy", default=None)
@common
@guarded("researcher")
def trial_randomize(participant, gates, seed, retriever, policy, settings):
    from companion import trials

    names = [g.strip() for g in gates.split(",") if g.strip()]
    try:
        trials.randomize(open_store(settings), participant, names, seed, retriever or settings.retriever,
                         policy or settings.policy)
    except (StoreError, LookupError) as e:
        fail(str(e))
    click.echo(f"{participant}: each turn draws one of {', '.join(names)} (blocked, seed {seed})")


@trial.command("show")
@click.option("--participant", "-p", required=True)
@common
@guarded("researcher")
def trial_show(participant, settings):
    from companion import trials

    click.echo(json.dumps(trials.current(open_store(settings), participant)))


@trial.command("clear")
@click.option("--participant", "-p", required=True)
@common
@guarded("researcher")
def trial_clear(participant, settings):
    from companion import trials

    trials.clear(open_store(settings), participant)
    click.echo(f"{participant}: back to the configured arm")


@main.command()
@click.option("--host", default=None)
@click.option("--port", type=int, default=None)
@click.option("--model", default=None, help="Any litellm model string, or `echo`.")
@plugin_options
@click.option("--researcher-password", envvar="COMPANION_RESEARCHER_PASSWORD", default=None,
              help="Opens the researcher page (env COMPANION_RESEARCHER_PASSWORD); without it the page stays shut.")
@common
def serve(host, port, model, gate, retriever, policy, researcher_password, settings):
    """Serve the Gradio app (default http://127.0.0.1:7860)."""
    from companion import app

    from companion import gateway

    settings = with_plugins(settings, host=host, port=port, model=model, gate=gate, retriever=retriever,
                            policy=policy, researcher_password=researcher_password)
    resolved = gateway.resolve(settings.model)
    embedded = resolved.startswith("local/")
    click.echo(f"companion: model {resolved}" + (
        " (the embedded demo model: small, it loses the thread; see \"Connecting a real model\" in the README)"
        if embedded else ""))
    click.echo(f"companion: data in {settings.data_dir}")
    if embedded:
        from companion.backends import local

        click.echo("companion: loading the model ...")
        try:
            local.load(resolved)  # now, once, not inside the first participant's turn
        except local.LocalModelError as e:
            fail(str(e))
    url = _url(settings.host, settings.port)
    click.echo(f"companion: starting on {url} ...")
    sys.stdout.flush()
    threading.Thread(target=_say_ready, args=(settings.host, settings.port, url), daemon=True).start()
    app.serve(settings)


def _say_ready(host: str, port: int, url: str, wait: float = 300.0) -> None:
    """Print the ready line once the app answers on its port (app.serve blocks until Ctrl-C)."""
    import socket
    import time

    target = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((target, port), timeout=1):
                click.echo(f"companion: ready at {url} (Ctrl-C to stop)")
                sys.stdout.flush()
                return
        except OSError:
            time.sleep(0.2)


def _url(host: str, port: int) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


@main.group("researcher")
def researcher_group():
    """The researcher credential of this data directory (for the CLI)."""


@researcher_group.command("set-password")
@click.option("--new-password", envvar="COMPANION_NEW_RESEARCHER_PASSWORD", prompt=True, hide_input=True,
              confirmation_prompt=True, help="The new password (env COMPANION_NEW_RESEARCHER_PASSWORD).")
@click.option("--researcher-password", "researcher_password", envvar="COMPANION_RESEARCHER_PASSWORD",
              default=None, help="The current password, when one is set.")
@common
def researcher_set_password(new_password, researcher_password, settings):
    """Set (or change, given the current one) the researcher password; stored as a scrypt hash."""
    from companion import auth

    if auth.researcher_hash(settings.data_dir) is not None:
        if not researcher_password:
            fail("a researcher password is already set: give the current one with --researcher-password")
        _check_researcher(settings, researcher_password)
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        auth.set_researcher_password(settings.data_dir, new_password)
    except ValueError as e:
        fail(str(e))
    click.echo(f"researcher password set for {settings.data_dir}")


class _Bench(click.Group):
    """Benchmarks from other packages (eval's `bench chat`) join through the `companion.bench`
    entry points, so the app package never imports the harness that judges it."""

    _plugins_loaded = False

    def _load_plugins(self) -> None:
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from importlib.metadata import entry_points

            for ep in entry_points(group="companion.bench"):
                if ep.name not in self.commands:
                    self.add_command(ep.load(), ep.name)

    def list_commands(self, ctx):
        self._load_plugins()
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._load_plugins()
        return super().get_command(ctx, name)


@main.group(cls=_Bench)
def bench():
    """Benchmarks on synthetic data or a scripted chat (your data is not touched)."""


@bench.command("recall")
@click.option("--messages", "n_messages", type=click.IntRange(min=100), default=30000, show_default=True,
              help="Size of the synthetic conversation.")
@click.option("--queries", "n_queries", type=click.IntRange(min=1), default=200, show_default=True,
              help="Query turns timed (decision path and floor each).")
@click.option("--seed", type=int, default=7, show_default=True, help="Seed of the synthetic conversation.")
@click.option("--batch-size", type=click.IntRange(min=1), default=1024, show_default=True,
              help="Messages per append_many call while ingesting (one embedding call each).")
@click.option("--bm25-sample", type=click.IntRange(min=1), default=100, show_default=True,
              help="Queries compared with rank-bm25.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Where the bench database goes (default: a temporary directory, removed after).")
def bench_recall(n_messages, n_queries, seed, batch_size, bm25_sample, as_json, data_dir):
    """Ingest rate, decision-path latency against its floor, BM25 against rank-bm25."""
    from companion import bench as bench_mod
    from memory import embeddings

    embeddings.prefer_throughput()  # a batch job: see embeddings.prefer_throughput

    result = bench_mod.run(n_messages=n_messages, n_queries=n_queries, seed=seed, data_dir=data_dir,
                           batch_size=batch_size, bm25_sample=bm25_sample,
                           progress=bench_mod.progress_to_stderr)
    click.echo(json.dumps(result) if as_json else bench_mod.render(result))



# ---------------------------------------------------------------- derived memory (issue 4)

@main.group("memory")
def memory_group():
    """Derived memory: profile claims, preference cells, persona, file memory."""


def _memory_participant(store, participant, need_consent: bool = True):
    from consent import records as consent_records
    from memory import participants

    if not participants.exists(store, participant):
        fail(f"unknown participant {participant!r}")
    if need_consent and not consent_records.status(store, participant).allows("memory"):
        fail(f"{participant!r} has not consented to the memory scope: nothing is derived")


def extractor_options(fn):
    fn = click.option("--extractor", type=click.Choice(["rule", "model"]), default="rule", show_default=True,
                      help="rule: explicit first-person statements, no model; model: a capable model proposes "
                           "(prompt as versioned data), the same verification decides.")(fn)
    return click.option("--model", "extract_model", default=None,
                        help="The model of --extractor model (any litellm string; default: the configured model).")(fn)


def _extractor(kind: str, model: str | None, settings):
    from memory import extract

    if kind == "rule":
        return extract.RuleExtractor()
    from companion import gateway

    model = model or settings.model
    return extract.ModelExtractor(lambda msgs: gateway.complete(model, msgs, timeout=settings.timeout,
                                                                max_tokens=600, retries=settings.retries).text)


@memory_group.command("consolidate")
@click.option("--participant", "-p", required=True)
@click.option("--budget-chars", type=click.IntRange(min=100), default=None,
              help="File-memory size budget (default: memory.filememory.DEFAULT_BUDGET_CHARS).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@extractor_options
@common
@guarded("participant")
def memory_consolidate(participant, budget_chars, as_json, extractor, extract_model, settings):
    """Extract from the messages not yet processed, verify, merge."""
    from memory import extract, filememory

    store = open_store(settings)
    _memory_participant(store, participant)
    report = extract.consolidate(store, participant, _extractor(extractor, extract_model, settings),
                                 budget_chars=budget_chars or filememory.DEFAULT_BUDGET_CHARS)
    _memory_report(report, as_json)


def _memory_report(report, as_json):
    if as_json:
        click.echo(json.dumps(report.public(), ensure_ascii=False))
    else:
        click.echo(f"{report.participant}: {report.messages} messages, {report.proposals} proposals "
                   f"{report.verdicts}; claims {report.claims}; cells {report.cells}; persona {report.persona}; "
                   f"file lines +{report.lines_added} refused {report.lines_refused}; "
                   f"tombstoned {report.tombstoned}; processed up to ordinal {report.processed_ordinal}")


@memory_group.command("rebuild")
@click.option("--participant", "-p", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@extractor_options
@common
@guarded("participant")
def memory_rebuild(participant, as_json, extractor, extract_model, settings):
    """Derive profile claims, preference cells and persona items again from the full history."""
    from memory import extract

    store = open_store(settings)
    _memory_participant(store, participant)
    _memory_report(extract.rebuild(store, participant, _extractor(extractor, extract_model, settings)), as_json)


@memory_group.command("show")
@click.option("--participant", "-p", required=True)
@click.option("--all", "show_all", is_flag=True, help="Superseded claims and cells too.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@common
@guarded("participant")
def memory_show(participant, show_all, as_json, settings):
    """Everything remembered: claims, preference cells, persona items, file memory (with sources)."""
    from memory import cells, claims, filememory, persona

    store = open_store(settings)
    _memory_participant(store, participant, need_consent=False)
    cl = claims.all_(store, participant) if show_all else claims.current(store, participant)
    ce = cells.all_(store, participant) if show_all else cells.current(store, participant)
    pe = persona.all_(store, participant) if show_all else persona.current(store, participant)
    if as_json:
        click.echo(json.dumps({
            "claims": [c.public() for c in cl], "cells": [c.public() for c in ce],
            "persona": [x.public() for x in pe],
            "file": [line.public() for line in filememory.lines(store, participant)],
            "file_versions": filememory.versions(store, participant),
        }, ensure_ascii=False, indent=1))
        return
    click.echo("## Claims")
    for c in cl:
        window = f"{c.from_dayid}..{c.to_dayid or ''}"
        click.echo(f"[{c.id}] {c.text}  ({c.category}, {c.confidence:.2f}, {c.verdict}, {c.status}, "
                   f"{window}, sources {', '.join(c.source_dayids)})")
    click.echo("\n## Preference cells")
    for c in ce:
        click.echo(f"[{c.id}] {c.context}/{c.attribute} = {c.setting}  ({c.status}, sources {', '.join(c.source_dayids)})")
    click.echo("\n## Persona")
    for x in pe:
        click.echo(f"[{x.id}] {x.slot} = {x.value}: {x.text}  ({x.strength}, {x.status}, "
                   f"sources {', '.join(x.source_dayids)})")
    click.echo("\n## File memory")
    click.echo(filememory.render(store, participant))


@memory_group.command("delete")
@click.option("--participant", "-p", required=True)
@click.option("--claim", "claim_id", type=int, default=None)
@click.option("--cell", "cell_id", type=int, default=None)
@click.option("--line", "line_id", type=int, default=None)
@click.option("--persona", "persona_id", type=int, default=None)
@common
@guarded("participant")
def memory_delete(participant, claim_id, cell_id, line_id, persona_id, settings):
    """Delete one item everywhere; it is not derived again from the same messages."""
    from memory import cells, claims, filememory, persona

    store = open_store(settings)
    _memory_participant(store, participant, need_consent=False)
    if [claim_id, cell_id, line_id, persona_id].count(None) != 3:
        fail("give exactly one of --claim, --cell, --line, --persona")
    try:
        if claim_id is not None:
            claims.delete(store, participant, claim_id)
        elif persona_id is not None:
            persona.delete(store, participant, persona_id)
        elif cell_id is not None:
            cells.delete(store, participant, cell_id)
        else:
            filememory.delete_line(store, participant, line_id)
    except StoreError as e:
        fail(str(e))
    click.echo("deleted")


@memory_group.command("restore")
@click.option("--participant", "-p", required=True)
@click.option("--version", "version", type=int, required=True)
@common
@guarded("participant")
def memory_restore(participant, version, settings):
    """Make the file memory equal to an earlier version (recorded as a new version)."""
    from memory import filememory

    store = open_store(settings)
    _memory_participant(store, participant, need_consent=False)
    try:
        v = filememory.restore(store, participant, version)
    except StoreError as e:
        fail(str(e))
    click.echo(f"restored version {version} as version {v}")


@memory_group.command("export")
@click.option("--participant", "-p", required=True)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False))
@common
@guarded("participant")
def memory_export(participant, out, settings):
    """Write profile.jsonl and persona.json (docs/FORMAT.md) under OUT. Text is not pseudonymized
    here: releases go through `companion export`. The persona holds what consolidation derived
    (memory.persona): Big Five, demographic slots, descriptions by facet, quirks."""
    from pathlib import Path

    from memory import extract, persona

    store = open_store(settings)
    _memory_participant(store, participant, need_consent=False)
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    rows = extract.profile_rows(store, participant)
    with open(d / "profile.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    p = persona.persona(store, participant)
    (d / "persona.json").write_text(json.dumps(p, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    click.echo(f"wrote {len(rows)} claims to {d / 'profile.jsonl'} and a persona ({len(p['big_five'])} Big Five "
               f"traits, {len(p['slots'])} slots, {len(p['descriptions'])} descriptions, {len(p['quirks'])} quirks) "
               f"to {d / 'persona.json'}")



# `companion feedback`, `trial report`, `trial plan` (live trials with outcomes) live in their own module.
from companion import trialcli  # noqa: E402

trialcli.attach(main, trial)

if __name__ == "__main__":
    main()
