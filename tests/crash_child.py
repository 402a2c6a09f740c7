"""Crash harness child: a zygote that forks turn-running workers and SIGKILLs them.

    python -m tests.crash_child DATA_DIR ACK_FILE --kills 50 --seed 1

The zygote imports the whole turn (litellm, gateway, store: ~7 s) once, starts no thread,
then for each run os.fork()s a worker. The worker opens the store, and runs scripted turns
with the `echo` model for two participants, alternating; after each `turn` returns it
writes one ACK line to a pipe (`ACK <participant> <dayid> <reply_dayid> <text>`), with a
single os.write, so a line the zygote reads was acknowledged before the kill. Every third turn
it then deletes that turn's reply, between `TRYDEL <participant> <dayid>` (written before) and
`DEL <participant> <dayid>` (written after the delete committed). The zygote
sleeps a random time, SIGKILLs the worker, reaps it, drains the pipe into ACK_FILE (fsync'd)
and starts the next run. Nothing a killed worker did in Python is cleaned up: no atexit,
no finally, no ROLLBACK; SQLite's WAL recovery on the next open is what is tested.

Test hooks: the worker holds every write transaction open a few ms before COMMIT (see
hold_transactions_open), and it replaces the process-wide default embedder (`memory.embeddings._default`,
what `embeddings.default()` returns and what every Store's VectorIndex uses) with HashEmbedder,
a deterministic 384-d bag-of-words vector. Loading all-MiniLM-L6-v2 per fork would cost seconds
per kill, and torch is not fork-safe once its thread pool runs. The write path (vectors stored
in the same transaction as the message) is the same code either way.
"""

from __future__ import annotations

import argparse
import os
import random
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


def install_hash_embedder() -> None:
    from memory import embeddings

    embeddings._default = embeddings.HashEmbedder()  # the documented test hook (see module docstring)


def text_for(run: int, k: int, participant: str) -> str:
    # Unique words per message (run/k tags) so BM25 and dense search can find each one.
    return f"r{run}k{k}{participant} note number {k} of run {run} from {participant} tag{run}x{k}"


def hold_transactions_open(seed: int, longest: float = 0.01) -> None:
    """Test hook: every write transaction sleeps up to `longest` s after its last statement and
    before COMMIT, so a good share of kills land while the worker holds SQLite's write lock with
    uncommitted changes (the next process must roll them back and get the lock)."""
    import contextlib

    from memory.store import Store

    rng = random.Random(seed)
    plain = Store.transaction

    @contextlib.contextmanager
    def held(self):
        with plain(self) as conn:
            yield conn
            time.sleep(rng.uniform(0, longest))

    Store.transaction = held


def worker(data_dir: str, run: int, wfd: int) -> None:
    install_hash_embedder()
    hold_transactions_open(run)
    from companion.settings import Settings
    from companion.turn import turn
    from memory import messages
    from memory.store import Store

    settings = Settings(home=data_dir, model="echo", retries=0, timeout=10, grounded="off")  # storage, not replies
    store = Store(data_dir)
    k = 0
    while True:
        p = PARTICIPANTS[k % 2]
        text = text_for(run, k, p)
        r = turn(store, p, text, context="personal", settings=settings)
        if r.reply is None or r.message is None:
            os.write(wfd, f"FAULT {p} {r.shown!r}\n".encode())
        else:
            os.write(wfd, f"ACK {p} {r.message.dayid} {r.reply.dayid} {text}\n".encode())
            if k % 3 == 2:  # now and then delete a reply: keys must not be reused, indexes must follow
                os.write(wfd, f"TRYDEL {p} {r.reply.dayid}\n".encode())  # before: a kill may land in between
                messages.delete(store, p, r.reply.dayid)
                os.write(wfd, f"DEL {p} {r.reply.dayid}\n".encode())
        k += 1


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("ack_file")
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-delay", type=float, default=0.05)
    ap.add_argument("--max-delay", type=float, default=1.0)
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
    rng = random.Random(a.seed)
    kills = acks = dels = 0
    with open(a.ack_file, "a", encoding="utf-8") as ackf:
        for run in range(a.kills):
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    worker(a.data_dir, run, w)
                except BaseException:
                    import traceback

                    traceback.print_exc()
                    os._exit(3)
                os._exit(0)
            os.close(w)
            time.sleep(rng.uniform(a.min_delay, a.max_delay))
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
                print(f"worker {run} ended before the kill (status {status})", file=sys.stderr)
                return 1
            kills += 1
            data = b""
            while chunk := os.read(r, 65536):
                data += chunk
            os.close(r)
            # A line cut mid-write cannot happen (one os.write per line, < PIPE_BUF) but be strict.
            for line in data.decode().splitlines():
                ackf.write(line + "\n")
                acks += line.startswith("ACK ")
                dels += line.startswith("DEL ")
            ackf.flush()
            os.fsync(ackf.fileno())
    print(f"KILLS {kills} ACKS {acks} DELS {dels} IMPORT_S {t_import:.2f} TOTAL_S {time.perf_counter() - t0:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
