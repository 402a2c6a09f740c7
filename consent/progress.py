"""Progress for the researcher's long commands (export, release check, annotate finalize, trial
report): a tqdm bar on stderr when stderr is a terminal, nothing when it is piped or captured, so
a script's output stays what it was. `eval` uses tqdm the same way."""

from __future__ import annotations

import sys


def on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


TICK_SECONDS = 1.0


def bar(total: int | None = None, desc: str = "", unit: str = "it", show: bool | None = None):
    """A tqdm bar; `show` None: only on a terminal. Written to stderr and removed when closed.
    While shown it is redrawn every TICK_SECONDS, so its elapsed time moves even while one slow
    step (loading the recognizers' models, one batch of NER) runs: never a still screen."""
    import threading

    from tqdm import tqdm

    show = on_terminal() if show is None else show
    b = tqdm(total=total, desc=desc, unit=unit, disable=not show, leave=False, file=sys.stderr,
             dynamic_ncols=True, mininterval=0.2)
    if show:
        stop = threading.Event()

        def tick():
            while not stop.wait(TICK_SECONDS):
                try:
                    b.refresh()
                except Exception:  # closed meanwhile
                    return

        threading.Thread(target=tick, daemon=True, name="progress-tick").start()
        close = b.close

        def closed():
            stop.set()
            close()

        b.close = closed
    return b


def scan_many(texts: list[str], bar_, chunk: int = 32, cache: dict | None = None) -> list[list]:
    """consent.recognizers.scan_many in chunks, advancing `bar_` by each chunk's texts (the
    recognizers' spaCy pass is the slow part of an export and of a release check)."""
    from consent import recognizers

    out: list[list] = []
    cache = {} if cache is None else cache
    for i in range(0, len(texts), chunk):
        part = texts[i:i + chunk]
        out += recognizers.scan_many(part, cache=cache)
        bar_.update(len(part))
    return out
