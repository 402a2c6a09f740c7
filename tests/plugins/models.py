"""Model backends with scripted faults, for the gateway's failure paths."""

from __future__ import annotations

import time

from companion.backends.base import TextBackend


class Failing(TextBackend):
    def generate(self, model, messages, params):
        raise RuntimeError("backend exploded")
        yield  # pragma: no cover


class Slow(TextBackend):
    def generate(self, model, messages, params):
        time.sleep(3)
        yield "too late"


class Empty(TextBackend):
    def generate(self, model, messages, params):
        yield "   "


class Flaky(TextBackend):
    """Fails on every odd call: a single retry recovers."""

    calls = 0

    def generate(self, model, messages, params):
        type(self).calls += 1
        if type(self).calls % 2 == 1:
            raise ConnectionError("transient")
        yield "recovered"
