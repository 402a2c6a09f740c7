"""Crash harness child: a zygote that forks turn-running workers and SIGKILLs each one at a
point of its work fixed by the seed, never by the clock.

    python -m tests.crash_child DATA_DIR ACK_FILE --kills 50 --seed 1

The zygote imports the whole turn (litellm, gateway, store, preference models) once, starts no
thread, then for each run os.fork()s a worker. The worker opens the store and runs scripted
turns with the `echo` model for two participants, alternating; after each `turn` returns it
writes one ACK line to a pipe (`ACK <participant> <dayid> <reply_dayid> <text>`, a single
os.write), so a line the zygote reads was acknowledged. The third turn of a run (k=2) then
deletes its reply, between `TRYDEL <participant> <dayid>` (written before) and
`DEL <participant> <dayid>` (written after the delete committed).

Where each run dies is drawn from the seed (`plan`): the turn (k = 0..3) and a site in it:
- `user J` / `reply J` / `vector J` / `delete J`: inside that write transaction (the user's
  message; the reply with its trace; the reply's vector; the deletion), before its J-th
  statement after BEGIN (trigger steps count too), or before its COMMIT if it has fewer: the
  write lock is held and changes are uncommitted;
- `user-committed` / `reply-committed`: just after that transaction committed, before anything
  else (the reply-committed turn is stored whole but was never acknowledged);
- `user-race` / `reply-race`: the worker announces the COMMIT and goes on; the zygote kills it
  at once, so the kill lands inside SQLite's commit or at the barrier just after it (the worker
  cannot pass it): where exactly is up to the machine, what was acknowledged is not;
- `acked` (after the ACK, before the reply's vector), `trydel`, `deleted` (after the delete
  committed, before DEL).
At the site the worker writes `HALT <run> <k> <site> <J> <where>` and waits (signal.pause) for
the zygote's SIGKILL; the zygote waits for that line, not for a time. So kills, acknowledged
turns and deletions are the same numbers on any machine (`expected(plan)`); a timeout exists
only as a safety net against a hung worker. Nothing a killed worker did in Python is cleaned
up: no atexit, no finally, no ROLLBACK; SQLite's WAL recovery on the next open is what is tested.

Test hooks (all in the worker): the process-wide default embedder (`memory.embeddings._default`,
what every Store's VectorIndex uses) is HashEmbedder, a deterministic 384-d bag-of-words vector
(loading all-MiniLM-L6-v2 per fork would cost seconds per kill; torch is not fork-safe once its
thread pool runs); the store's work after a reply (`store.later`, the reply's vector) runs on the
worker's own thread at a fixed point (after the ACK; after the delete in the deleting turn)
instead of on the background thread, so every statement comes in the same order each run; a
sqlite3 trace callback on the worker's connection finds the sites. The write path itself is the
product's code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import select
import signal
import sys
import threading
import time


PARTICIPANTS = ("ana", "ben")
PRELOAD = (
    "litellm.proxy._types", "litellm.litellm_core_utils.logging_callback_manager",
    "litellm.litellm_core_utils.default_encoding", "litellm.litellm_core_utils.duration_parser",
    "litellm.integrations.generic_api", "litellm.llms.litellm_proxy", "litellm.proxy.spend_tracking",
    "litellm.types.object_permission", "tiktoken.load", "tiktoken_ext.openai_public",
    "memory.embeddings", "memory.indexes", "sqlite_vec", "numpy.typing",
)

DELETING_TURN = 2  # k of the turn whose reply is deleted (k % 3 == 2; k never exceeds 3)
TURNS = range(4)   # a run dies in one of its first four turns
IN_TRANSACTION = ("user", "reply", "vector", "delete")  # sites with a statement number J
SITES = ("user", "user-race", "user-committed", "reply", "reply-race", "reply-committed", "acked", "vector")
DELETE_SITES = ("trydel", "delete", "deleted")  # only in the deleting turn
AFTER_ACK = {"acked", "vector", "trydel", "delete", "deleted"}  # the dying turn was acknowledged
# What a kill at each site leaves of the dying turn: user message, reply (None: either)
LEFT = {"user": (False, False), "user-race": (None, False), "user-committed": (True, False),
        "reply": (True, False), "reply-race": (True, None), "reply-committed": (True, True)}


def pairs() -> list[tuple[int, str]]:
    """Every (turn k, site) a run can die at (35)."""
    return [(k, s) for k in TURNS for s in SITES + (DELETE_SITES if k == DELETING_TURN else ())]


def plan(seed: int, kills: int) -> list[tuple[int, str, int]]:
    """(turn k, site, J) of each run: every pair of `pairs()` once in a seeded order, again and
    again, so each len(pairs()) runs reach every site of every turn; J (1-12) where it applies."""
    rng = random.Random(seed)
    pairs_ = pairs()
    out: list[tuple[int, str, int]] = []
    while len(out) < kills:
        rng.shuffle(pairs_)
        out += [(k, s, rng.randint(1, 12) if s in IN_TRANSACTION else 0) for k, s in pairs_]
    return out[:kills]


def expected(runs) -> dict[str, int]:
    """Acknowledged turns, attempted and acknowledged deletions a plan must produce."""
    acks = tried = dels = 0
    for k, site, _ in runs:
        acks += k + (site in AFTER_ACK)
        tried += (k > DELETING_TURN) or (k == DELETING_TURN and site in ("trydel", "delete", "deleted", "vector"))
        dels += (k > DELETING_TURN) or (k == DELETING_TURN and site == "vector")
    return {"KILLS": len(runs), "ACKS": acks, "TRIED": tried, "DELS": dels}


def install_hash_embedder() -> None:
    from memory import embeddings

    embeddings._default = embeddings.HashEmbedder()  # the documented test hook (see module docstring)


def text_for(run: int, k: int, participant: str) -> str:
    # Unique words per message (run/k tags) so BM25 and dense search can find each one.
    return f"r{run}k{k}{participant} note number {k} of run {run} from {participant} tag{run}x{k}"


class Sites:
    """The worker's position (turn k, labelled transaction, statements since BEGIN) and the one
    site where it stops."""

    def __init__(self, wfd: int, run: int, k: int, site: str, j: int):
        self.wfd, self.run, self.target, self.site, self.j = wfd, run, (k, site), site, j
        self.k, self.scope, self.n, self.racing = 0, None, 0, False

    def halt(self, where: str, wait: bool = True) -> None:
        os.write(self.wfd, f"HALT {self.run} {self.k} {self.site} {self.j} {where}\n".encode())
        while wait:
            signal.pause()  # until the zygote's SIGKILL

    def here(self, site: str) -> bool:
        return (self.k, site) == self.target

    def at(self, site: str) -> None:
        """A site between steps of the worker (after a commit, after an ACK)."""
        if self.racing and site.endswith("-committed"):
            while True:  # the barrier after a raced COMMIT: the kill is on its way
                signal.pause()
        if self.here(site):
            self.halt("here")

    @contextlib.contextmanager
    def labelled(self, scope: str):
        outer, self.scope, self.n = self.scope, scope, 0
        try:
            yield
        finally:
            self.scope = outer

    def statement(self, sql: str) -> None:  # sqlite3 trace callback: before each statement runs
        if self.scope is None:
            return
        word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if word == "BEGIN":
            self.n = 0
        elif word == "COMMIT":
            if self.here(self.scope):
                self.halt(f"before-COMMIT-after-{self.n}")
            elif self.here(self.scope + "-race"):
                self.racing = True
                self.halt("at-COMMIT", wait=False)
        else:
            self.n += 1
            if self.here(self.scope) and self.n == self.j:
                self.halt(f"before-statement-{self.n}")


def worker(data_dir: str, run: int, wfd: int, k_die: int, site: str, j: int) -> None:
    install_hash_embedder()
    from companion.settings import Settings
    from companion.turn import turn
    from memory import messages
    from memory.store import Store

    sites = Sites(wfd, run, k_die, site, j)
    append_many = messages.append_many

    def labelled_append_many(store, participant, rows, *args, **kw):
        scope = "user" if rows[0]["sender"] == "user" else "reply"
        with sites.labelled(scope):
            out = append_many(store, participant, rows, *args, **kw)
        sites.at(scope + "-committed")
        return out

    messages.append_many = labelled_append_many  # messages.append and the turn call it by this name

    settings = Settings(home=data_dir, model="echo", retries=0, timeout=10, grounded="off")  # storage, not replies
    store = Store(data_dir)
    pending: list = []

    def drain(participant=None) -> None:
        with sites.labelled("vector"):
            while pending:
                pending.pop(0)()

    store.later = lambda participant, fn: pending.append(fn)
    store.settle = drain
    store.conn.set_trace_callback(sites.statement)
    for k in range(k_die + 1):
        sites.k = k
        p = PARTICIPANTS[k % 2]
        text = text_for(run, k, p)
        r = turn(store, p, text, context="personal", settings=settings)
        if r.reply is None or r.message is None:
            os.write(wfd, f"FAULT {p} {r.shown!r}\n".encode())
            os._exit(4)
        os.write(wfd, f"ACK {p} {r.message.dayid} {r.reply.dayid} {text}\n".encode())
        sites.at("acked")
        if k == DELETING_TURN:  # delete a reply: keys must not be reused, indexes must follow
            os.write(wfd, f"TRYDEL {p} {r.reply.dayid}\n".encode())  # before: a kill may land in between
            sites.at("trydel")
            with sites.labelled("delete"):
                messages.delete(store, p, r.reply.dayid)
            sites.at("deleted")
            os.write(wfd, f"DEL {p} {r.reply.dayid}\n".encode())
        drain()  # the reply's vector (in the deleting turn: finds its message gone, stores nothing)
    os.write(wfd, f"MISSED {run} {k_die} {site} {j}\n".encode())  # the site was never reached
    os._exit(5)


def setup(data_dir: str) -> None:
    """Consent for both participants, once, in a forked child (the zygote stays clean)."""
    pid = os.fork()
    if pid == 0:
        try:
            install_hash_embedder()
            from consent import records as consent
            from memory.store import Store

            store = Store(data_dir)
            for p in PARTICIPANTS:
                if not consent.status(store, p).accepted:
                    consent.accept(store, p, tz="UTC")
            store.close()
            os._exit(0)
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit("setup failed")


def run_once(data_dir: str, run: int, where: tuple[int, str, int], timeout: float) -> bytes:
    """Fork a worker, wait for its HALT line, SIGKILL it; returns all it wrote."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            worker(data_dir, run, w, *where)
        except BaseException:
            import traceback

            traceback.print_exc()
        os._exit(3)
    os.close(w)
    data = b""
    deadline = time.monotonic() + timeout
    while b"HALT " not in data:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise SystemExit(f"worker {run} did not reach {where} within {timeout:g} s (safety net)")
        chunk = os.read(r, 65536)
        if not chunk:
            _, status = os.waitpid(pid, 0)
            raise SystemExit(f"worker {run} ended (status {status}) before {where}: {data.decode()[-500:]}")
        data += chunk
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        raise SystemExit(f"worker {run} ended before the kill (status {status})")
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    return data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("ack_file")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="safety net only: how long a worker may take to reach its kill site")
    a = ap.parse_args(argv)

    t0 = time.perf_counter()
    # Everything heavy is imported here, before any fork. No thread may run when we fork.
    import companion.gateway  # noqa: F401  (litellm)
    import companion.turn  # noqa: F401
    import consent.records  # noqa: F401
    import memory.store  # noqa: F401
    from companion import gateway

    gateway.ensure_backends()  # imports litellm and registers `echo` as a custom provider
    import memory.retrievers, memory.gates, memory.policies  # noqa: F401,E401

    # What litellm imports lazily on its first completion (measured: ~1 s), imported here
    # instead of in every worker. Plain imports start no thread.
    import importlib

    for mod in PRELOAD:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    # The reply path reads preferences (spaCy parse, classifier over sentence embeddings): load
    # them once here, as the app does at start, not in every short-lived worker.
    from memory import preferences

    preferences.warm()
    t_import = time.perf_counter() - t0
    assert threading.active_count() == 1, "a thread runs before fork: forking would be unsafe"
    setup(a.data_dir)
    counts = dict.fromkeys(("KILLS", "ACKS", "TRIED", "DELS"), 0)
    with open(a.ack_file, "a", encoding="utf-8") as ackf:
        for run, where in enumerate(plan(a.seed, a.kills)):
            data = run_once(a.data_dir, run, where, a.timeout)
            counts["KILLS"] += 1
            for line in data.decode().splitlines():  # one os.write per line (< PIPE_BUF): never cut
                ackf.write(line + "\n")
                tag = line.split(" ", 1)[0]
                counts["ACKS"] += tag == "ACK"
                counts["TRIED"] += tag == "TRYDEL"
                counts["DELS"] += tag == "DEL"
            ackf.flush()
            os.fsync(ackf.fileno())
    print(" ".join(f"{k} {v}" for k, v in counts.items()),
          f"IMPORT_S {t_import:.2f} TOTAL_S {time.perf_counter() - t0:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
