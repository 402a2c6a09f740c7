"""Passphrases: scrypt (memory-hard), compared in constant time; failed sign-ins rate-limited
(in the database, memory.limits)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

from memory import limits

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
    """At most `max_failures` failures of a key within `window` seconds, counted in the database
    (memory.limits), so every process serving the data, and every CLI command, sees the same
    count. `prefix` keeps kinds of key apart: a participant called "researcher" (a reserved name
    now, but there may be old accounts) never shares a count with the researcher page.
    `participants=True`: the names are participants' (or `subject=` says whose a key is), so a
    withdrawal erases their counts with the rest of them (memory.limits.erase)."""

    def __init__(self, store, prefix: str, max_failures: int = MAX_FAILURES, window: float = WINDOW,
                 participants: bool = False):
        self.store, self.prefix, self.participants = store, prefix, participants
        self.limit = limits.Limit(max_failures, window)

    def _key(self, name: str) -> str:
        return f"{self.prefix}:{name}"

    def _subject(self, name: str, subject: str | None) -> str | None:
        return subject if subject is not None else (name if self.participants else None)

    def blocked_for(self, name: str, subject: str | None = None) -> float:
        """Seconds until `name` may try again (0 when allowed)."""
        return limits.wait(self.store, self._key(name), self.limit, subject=self._subject(name, subject))

    def failed(self, name: str, subject: str | None = None) -> None:
        limits.record(self.store, self._key(name), self.limit.window, subject=self._subject(name, subject))

    def succeeded(self, name: str, subject: str | None = None) -> None:
        limits.clear(self.store, self._key(name), subject=self._subject(name, subject))


class SignInGuard:
    """A sign-in limit, per name *and* client address, with a wider cap per name.

    Five wrong passphrases for a name from one address block that address for a minute; the
    participant signing in from their own device is not locked out by someone guessing from
    another. Guessing spread over many addresses meets the per-name cap (30 in 10 minutes),
    which then blocks the name everywhere until the window passes: a slow lock-out is the
    price of stopping a distributed guess. Kept in the database (shared by every app process,
    kept across restarts). `kind` separates the guards: participant sign-ins ("participant")
    and the researcher page ("researcher-page") never count against each other.

    Every local client is 127.0.0.1: without a proxy that says who the client is
    (COMPANION_TRUSTED_PROXIES, docs/SECURITY.md), "per address" means "per machine".
    """

    def __init__(self, store, kind: str, per_address: tuple[int, float] = (MAX_FAILURES, WINDOW),
                 per_name: tuple[int, float] = (30, 600.0)):
        self.participants = kind == "participant"  # their counts go when they withdraw
        self.per_address = RateLimiter(store, f"{kind}@", *per_address)
        self.per_name = RateLimiter(store, kind, *per_name, participants=self.participants)

    def _who(self, name: str) -> str | None:
        return name if self.participants else None

    def blocked_for(self, name: str, address: str) -> float:
        return max(self.per_address.blocked_for(f"{name}@{address}", self._who(name)),
                   self.per_name.blocked_for(name))

    def failed(self, name: str, address: str) -> None:
        self.per_address.failed(f"{name}@{address}", self._who(name))
        self.per_name.failed(name)

    def succeeded(self, name: str, address: str) -> None:
        self.per_address.succeeded(f"{name}@{address}", self._who(name))


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
