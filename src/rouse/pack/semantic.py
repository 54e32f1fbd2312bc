"""Meaning, for recall: the small static embedding model the optional ``semantic`` extra
installs (wordllama's ``l2_supercat``; docs/recall.md "The semantic extra").

Nothing is downloaded: its two files are read from the installed package by
``safetensors`` and ``tokenizers``; ``wordllama`` itself is never imported (its loader
would fetch a tokenizer from a model hub, and it configures logging). The only rouse
module that loads ``numpy``, ``tokenizers`` or ``safetensors`` (an import-linter
contract), and only when a model is loaded: ``available()`` can be asked anywhere.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from rouse.core.errors import UsageError
from rouse.core.extras import install_hint
from rouse.pack.search import STOPWORDS, one_line

DISTRIBUTION = "wordllama"
WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
TENSOR = "embedding.weight"
DIMENSIONS = 256
MAX_TOKENS = 512  # a text's first 512 tokens make its vector
INSTALL = install_hint("semantic")


def package_dir() -> Path | None:
    """Where the model's files are installed, without importing anything; None if not."""
    try:
        spec = importlib.util.find_spec(DISTRIBUTION)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location)
        if (folder / WEIGHTS).is_file() and (folder / TOKENIZER).is_file():
            return folder
    return None


def _dependencies_present() -> bool:
    return all(importlib.util.find_spec(name) for name in ("numpy", "tokenizers", "safetensors"))


def available() -> bool:
    """True when the semantic extra is installed (its model and the libraries that read it)."""
    return package_dir() is not None and _dependencies_present()


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class Model:
    """The embedding model, loaded: ``embed`` texts to vectors, ``cosines`` against a query."""

    def __init__(self, folder: Path):
        import numpy
        from safetensors import safe_open
        from tokenizers import Tokenizer

        self._np = numpy
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        with safe_open(str(folder / WEIGHTS), framework="np") as weights:
            table = weights.get_tensor(TENSOR)
        self.table = numpy.ascontiguousarray(table, dtype=numpy.float32)
        # the weights file's name and size name the model (importlib.metadata costs ~70 ms)
        size = (folder / WEIGHTS).stat().st_size
        self.id = f"{DISTRIBUTION}/{Path(WEIGHTS).stem}/{size}"

    def embed(self, texts: list[str]) -> list[bytes]:
        """Each text's vector: float32, unit length (all zeros for a text with no tokens).

        Stopwords are left out (unless a text has nothing else): a mean over
        every token is pulled towards what all English shares."""
        np = self._np
        vectors: list[bytes] = []
        kept = [_content(text) for text in texts]
        for encoding in self.tokenizer.encode_batch(kept, add_special_tokens=False):
            ids = np.asarray(encoding.ids[:MAX_TOKENS], dtype=np.int64)
            ids = ids[(ids >= 0) & (ids < self.table.shape[0])]
            if ids.size == 0:
                vectors.append(np.zeros(self.table.shape[1], dtype=np.float32).tobytes())
                continue
            mean = self.table[ids].mean(axis=0)
            norm = float(np.linalg.norm(mean))
            vectors.append((mean / norm if norm else mean).astype(np.float32).tobytes())
        return vectors

    def cosines(self, query: bytes, vectors: list[bytes]) -> list[float]:
        """The cosine of each vector with ``query`` (all are unit length, or zero)."""
        return self.scores(query, self.stack(vectors))

    def stack(self, vectors: list[bytes]) -> Any:
        """The vectors as one matrix for :meth:`scores` (one of another width: zeros), so
        a process that searches the same vectors again stacks them once."""
        np = self._np
        width = self.table.shape[1]
        rows = [v if len(v) == width * 4 else bytes(width * 4) for v in vectors]
        return np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), width)

    def scores(self, query: bytes, matrix: Any) -> list[float]:
        """The cosine of ``query`` with each row of ``matrix`` (:meth:`stack`)."""
        if not len(matrix):
            return []
        scores: Any = matrix @ self._np.frombuffer(query, dtype=self._np.float32)
        return [float(s) for s in scores]

    def nearest_sentence(self, body: str, wanted: bytes) -> str:
        """The sentence of ``body`` nearest ``wanted`` (a query's vector), and what follows
        it, on one line: the snippet of a match by meaning alone."""
        sentences = [s.strip() for s in _SENTENCE.split(body) if s.strip()][:200]
        if not sentences:
            return ""
        at = 0
        if wanted and len(sentences) > 1:
            scores = self.cosines(wanted, self.embed(sentences))
            at = max(range(len(sentences)), key=lambda i: scores[i])
        return one_line(("…" if at else "") + " ".join(sentences[at:]))


_TOKEN = re.compile(r"\S+")
_EDGES = ".,;:!?()[]{}\"'"


def _content(text: str) -> str:
    """``text`` without its stopwords (all of it when it is nothing but stopwords)."""
    kept = [t for t in _TOKEN.findall(text) if t.strip(_EDGES).lower() not in STOPWORDS]
    return " ".join(kept) if kept else text


_loaded: dict[str, Model] = {}


def load() -> Model:
    """The model, loaded once per process. Raises UsageError when the extra is missing."""
    if "model" in _loaded:
        return _loaded["model"]
    folder = package_dir()
    if folder is None or not _dependencies_present():
        raise UsageError(f"recall by meaning needs the semantic extra: {INSTALL}")
    try:
        model = Model(folder)
    except Exception as exc:  # tokenizers and safetensors raise bare Exception subclasses
        raise UsageError(
            f"the semantic model in {folder} cannot be read ({exc}): reinstall it, {INSTALL}"
        ) from None
    _loaded["model"] = model
    return model
