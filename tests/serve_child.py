"""An app process for the multi-process test (tests/test_multiprocess_postgres.py):

    python -m tests.serve_child PORT DATA_DIR

The served app (companion.app.build, queued as `companion serve` queues it) on 127.0.0.1:PORT,
with the echo model, always-retrieve gate and hybrid retrieval, on the store that
$COMPANION_DATABASE_URL names; vectors by HashEmbedder (the documented test hook, see
tests/crash_child.py). Prints `READY <pid>` once it answers.
"""

from __future__ import annotations

import socket
import sys
import threading
import time


def main(argv=None) -> int:
    port, home = int(sys.argv[1]), sys.argv[2]
    from memory import embeddings

    embeddings._default = embeddings.HashEmbedder()
    from companion import app
    from companion.settings import Settings
    from companion import warmup
    from memory.store import Store

    settings = Settings(home=home, model="echo", gate="always", retriever="hybrid", recent_window=0, retries=0)
    store = Store(settings.data_dir)
    warmup.warm(settings, store)  # as `companion serve` does before it says ready
    demo = app.build(settings, store)
    demo.queue(default_concurrency_limit=8)
    # _frontend=False: Gradio's own 3-second probe of localhost fails on a loaded machine and
    # then refuses to start; this harness checks the port itself below.
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                ssr_mode=False, mcp_server=False, _frontend=False)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    import os

    print(f"READY {os.getpid()}", flush=True)
    threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
