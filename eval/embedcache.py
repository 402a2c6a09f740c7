"""Embeddings remembered on disk, so a benchmark run over a corpus embeds each text once per model.

`CachedEmbedder(inner, folder, model)` answers `encode` from `<folder>/<model>.npz` where it can and
asks `inner` for the rest, then writes the new vectors back (atomically: a killed run leaves the old
file). Keys are sha256 of the text, so the cache holds no text, but it does hold vectors derived from
the corpus: keep the folder out of version control (`.cache/` is gitignored).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np


def default_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "companion" / "embeddings"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class CachedEmbedder:
    """An embedder (encode / encode_one / clear_cache) in front of another, remembering on disk."""

    def __init__(self, inner, folder: str | Path, model: str):
        self.inner = inner
        self.model = model
        self.path = Path(folder) / f"{model}.npz"
        self._index: dict[str, int] = {}
        self._vecs: np.ndarray | None = None
        self._new: dict[str, np.ndarray] = {}
        self.hits = self.misses = 0
        if self.path.exists():
            with np.load(self.path, allow_pickle=False) as z:
                keys, self._vecs = z["keys"].tolist(), z["vecs"]
            self._index = {k: i for i, k in enumerate(keys)}

    def _get(self, k: str) -> np.ndarray | None:
        if k in self._new:
            return self._new[k]
        i = self._index.get(k)
        return None if i is None else self._vecs[i]

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        keys = [_key(t) for t in texts]
        found = [self._get(k) for k in keys]
        todo = [i for i, v in enumerate(found) if v is None]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            fresh = self.inner.encode([texts[i] for i in todo], batch_size=batch_size)
            for i, v in zip(todo, fresh):
                found[i] = self._new[keys[i]] = np.asarray(v, dtype=np.float32)
        if not texts:
            return self.inner.encode([], batch_size=batch_size)
        return np.stack(found).astype(np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def clear_cache(self) -> None:
        self.inner.clear_cache()

    def save(self) -> None:
        if not self._new:
            return
        keys = list(self._index) + list(self._new)
        parts = ([self._vecs] if self._vecs is not None else []) + [np.stack(list(self._new.values()))]
        vecs = np.concatenate(parts).astype(np.float32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vecs=vecs)
        os.replace(tmp, self.path)
        self._index = {k: i for i, k in enumerate(keys)}
        self._vecs, self._new = vecs, {}
