"""Passphrases: scrypt (memory-hard), compared in constant time; failed sign-ins rate-limited."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import threading
import time

N, R, P = 2**14, 8, 1
MAX_FAILURES = 5  # per name within WINDOW seconds
WINDOW = 60.0


def hash_passphrase(passphrase: str) -> str:
    if not passphrase or len(passphrase) < 4:
        raise ValueError("passphrase must be at least 4 characters")
    salt = os.urandom(16)
    key = hashlib.scrypt(passphrase.encode(), salt=salt, n=N, r=R, p=P, dklen=32)
    b = base64.b64encode
    return f"scrypt${N}${R}${P}${b(salt).decode()}${b(key).decode()}"


def verify(passphrase: str, stored: str | None) -> bool:
    if not stored:
        return False
    try:
        _, n, r, p, salt, key = stored.split("$")
        got = hashlib.scrypt(
            passphrase.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, base64.b64decode(key))


class RateLimiter:
    def __init__(self, max_failures: int = MAX_FAILURES, window: float = WINDOW):
        self.max_failures, self.window = max_failures, window
        self._fails: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def blocked_for(self, name: str) -> float:
        """Seconds until `name` may try again (0 when allowed)."""
        now = time.monotonic()
        with self._lock:
            recent = [t for t in self._fails.get(name, []) if now - t < self.window]
            self._fails[name] = recent
            if len(recent) < self.max_failures:
                return 0.0
            return self.window - (now - recent[0])

    def failed(self, name: str) -> None:
        with self._lock:
            self._fails.setdefault(name, []).append(time.monotonic())

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._fails.pop(name, None)


class SignInGuard:
    """The app's sign-in limit, per name *and* client address, with a wider cap per name.

    Five wrong passphrases for a name from one address block that address for a minute; the
    participant signing in from their own device is not locked out by someone guessing from
    another. Guessing spread over many addresses meets the per-name cap (30 in 10 minutes),
    which then blocks the name everywhere until the window passes: a slow lock-out is the
    price of stopping a distributed guess. Kept in memory: a restart forgets it (scrypt's cost,
    ~50 ms a try, still bounds the rate).
    """

    def __init__(self, per_address: RateLimiter | None = None, per_name: RateLimiter | None = None):
        self.per_address = per_address or RateLimiter()
        self.per_name = per_name or RateLimiter(max_failures=30, window=600.0)

    def blocked_for(self, name: str, address: str) -> float:
        return max(self.per_address.blocked_for(f"{name}@{address}"), self.per_name.blocked_for(name))

    def failed(self, name: str, address: str) -> None:
        self.per_address.failed(f"{name}@{address}")
        self.per_name.failed(name)

    def succeeded(self, name: str, address: str) -> None:
        self.per_address.succeeded(f"{name}@{address}")


class FileRateLimiter(RateLimiter):
    """The same limit, with failures kept in a small JSON file under an exclusive flock.

    Each CLI command is its own process, so an in-memory count would reset on every attempt;
    this file is shared by every process on the data directory. It lives next to the database,
    not in it: a failed check must not need the write lock that a long turn may hold, and it
    holds no personal data (names and times of failed checks, pruned to the window).
    """

    def __init__(self, path, max_failures: int = MAX_FAILURES, window: float = WINDOW):
        super().__init__(max_failures, window)
        self.path = os.fspath(path)

    def _update(self, change) -> dict:
        import fcntl
        import json

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(fd, "r+", encoding="utf-8") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                fails = json.loads(f.read() or "{}")
                if not isinstance(fails, dict):
                    fails = {}
            except ValueError:  # a torn or hand-edited file: start over rather than lock everyone out
                fails = {}
            now = time.time()
            fails = {n: [t for t in ts if now - t < self.window] for n, ts in fails.items()
                     if isinstance(ts, list)}
            fails = {n: ts for n, ts in fails.items() if ts}
            change(fails, now)
            f.seek(0)
            f.truncate()
            f.write(json.dumps(fails))
            f.flush()
        return fails

    def blocked_for(self, name: str) -> float:
        recent = self._update(lambda fails, now: None).get(name, [])
        if len(recent) < self.max_failures:
            return 0.0
        return max(0.0, self.window - (time.time() - min(recent)))

    def failed(self, name: str) -> None:
        self._update(lambda fails, now: fails.setdefault(name, []).append(now))

    def succeeded(self, name: str) -> None:
        self._update(lambda fails, now: fails.pop(name, None))


# --- the researcher credential of a data directory (used by the CLI) ---------------------------

RESEARCHER_KEY = "researcher.scrypt"


def researcher_key_path(data_dir):
    return os.path.join(os.fspath(data_dir), RESEARCHER_KEY)


def set_researcher_password(data_dir, password: str) -> None:
    """Store the scrypt hash of the researcher password (mode 0600), replacing any earlier one."""
    hashed = hash_passphrase(password)
    path = researcher_key_path(data_dir)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(hashed + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def researcher_hash(data_dir) -> str | None:
    try:
        with open(researcher_key_path(data_dir), encoding="utf-8") as f:
            return f.read().strip() or None
    except FileNotFoundError:
        return None
