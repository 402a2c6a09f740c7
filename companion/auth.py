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
