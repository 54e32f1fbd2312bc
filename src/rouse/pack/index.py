"""The recall index, ``.rouse/index.sqlite3``: SQLite FTS5 over notes, backlog, records
and context files, brought up to date at query time (docs/recall.md "The index").

Derived and disposable (SPEC §10): rebuilt when missing, corrupt or of another
schema, in memory when ``.rouse/`` cannot be written. What a hit shows is checked
against the file as it is now (:meth:`Index.current`). The schema and the rows are
:mod:`rouse.pack.indexdoc`'s, the queries :mod:`rouse.pack.search`'s, ``rouse recall``
:mod:`rouse.pack.recall`'s.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from rouse.cache.walk import cached_walk
from rouse.core import layout, statedir
from rouse.core.tree import File, Tree
from rouse.pack import indexdoc, search
from rouse.pack.indexdoc import Current, Doc, Stats, chunks, indexed_files, read_current, read_doc
from rouse.pack.search import Match, VectorRow

# the model (rouse.pack.semantic) is only ever handed in: this module never loads it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from rouse.pack.semantic import Model

FILE = "index.sqlite3"


class Index:
    """The recall index of one tree. ``Index(root)``, then :meth:`refresh`, then :meth:`search`.

    ``model`` (a :class:`rouse.pack.semantic.Model`) adds vectors: rows get one
    as they are written, rows without one (or made by another model) get one
    at the next refresh, and :meth:`search` can rank by meaning.

    Its connection may be used from any thread, one at a time (the MCP server's
    recall session holds a lock: :class:`rouse.pack.recall.Session`).
    """

    def __init__(
        self,
        root: Path,
        *,
        in_memory: bool = False,
        fts: bool | None = None,
        model: Model | None = None,
    ):
        self.root = root
        self.path = root / layout.STATE_DIR / FILE
        self.model = model
        # Without FTS5 in this SQLite build, a plain table and a LIKE scan stand in
        # (same ranking order: words matched, then keywords > path > body > log).
        self.fts = indexdoc.fts5_available() if fts is None else fts
        self.engine = "fts5" if self.fts else "like"
        self.stats = Stats()
        self.conn = self._memory() if in_memory else self._connect()
        #: the vectors by kind, as :meth:`_vectors` stacked them, and the index's version then
        self._stacked: dict[str | None, tuple[list[VectorRow], Any]] = {}
        self._stacked_at: tuple[int, int] | None = None

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening --------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if statedir.path_problem(self.root, FILE) is not None:
            return self._memory()  # .rouse/ behind a link: never build the index there
        try:
            self.path.parent.mkdir(exist_ok=True)
            return self._open_file()
        except (OSError, sqlite3.Error):
            return self._memory()

    def _memory(self) -> sqlite3.Connection:
        self.stats = Stats(rebuilt=True, in_memory=True)
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        indexdoc.create(conn, self.engine)
        return conn

    def _open_file(self) -> sqlite3.Connection:
        for attempt in range(2):
            conn = sqlite3.connect(
                self.path, timeout=5, isolation_level=None, check_same_thread=False
            )
            try:
                if indexdoc.is_empty(conn):
                    indexdoc.create(conn, self.engine)
                    self.stats.rebuilt = True
                    return conn
                if indexdoc.usable(conn, self.engine):
                    return conn
            except sqlite3.DatabaseError:
                pass  # corrupt: not a database, or damaged tables
            conn.close()
            if attempt == 0:
                indexdoc.discard(self.path)
        raise sqlite3.DatabaseError(f"cannot build an index at {self.path}")

    # -- keeping it fresh -----------------------------------------------------

    def refresh(self, tree: Tree) -> Stats:
        """Bring the index up to date with ``tree`` (a walk of this root)."""
        try:
            self._refresh(tree)
        except sqlite3.Error:
            if self.stats.in_memory:
                raise
            self.conn.close()  # e.g. a read-only .rouse/: start over in memory
            self.conn = self._memory()
            self._refresh(tree)
        return self.stats

    def _refresh(self, tree: Tree) -> None:
        files = indexed_files(tree)
        gone, replaced, changed = self._diff(files)
        if gone or changed:
            with indexdoc.writing(self.conn):
                gone, replaced, changed = self._diff(files)  # again, holding the write lock
                fresh = [read_doc(self.root, file, kind) for file, kind in changed.values()]
                for doc_id in gone + replaced:
                    self._delete(doc_id)
                self._insert(fresh)
        self.stats.read = len(changed)
        self.stats.removed = len(gone)
        self.stats.unchanged = len(files) - len(changed)
        if self.model is not None:
            self._fill_vectors()

    def _delete(self, doc_id: int) -> None:
        self.conn.execute("DELETE FROM docs WHERE rowid = ?", (doc_id,))
        self.conn.execute("DELETE FROM files WHERE id = ?", (doc_id,))
        self.conn.execute("DELETE FROM vectors WHERE id = ?", (doc_id,))

    def _insert(self, docs: list[Doc]) -> None:
        vectors = self._embed(docs) if self.model is not None and self._model_current() else None
        for at, doc in enumerate(docs):
            cursor = self.conn.execute(
                "INSERT INTO files (rel, kind, size, mtime_ns) VALUES (?, ?, ?, ?)",
                (doc.rel, doc.kind, doc.size, doc.mtime_ns),
            )
            self.conn.execute(
                "INSERT INTO docs (rowid, keywords, path, body, log, cjk) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (cursor.lastrowid, *doc.columns()),
            )
            if vectors is not None:
                self._put_vectors(cursor.lastrowid, vectors[at])

    def _put_vectors(self, doc_id: int | None, vectors: list[bytes]) -> None:
        """A row's vectors, one per chunk, numbered from 0."""
        rows = [(doc_id, n, vec) for n, vec in enumerate(vectors)]
        self.conn.executemany("INSERT INTO vectors (id, chunk, vec) VALUES (?, ?, ?)", rows)

    def _embed(self, docs: list[Doc]) -> list[list[bytes]]:
        """Each doc's vectors, one per chunk (:meth:`Doc.meaning_chunks`)."""
        assert self.model is not None
        self.stats.embedded += len(docs)
        texts = [doc.meaning_chunks() for doc in docs]
        flat = self.model.embed([text for parts in texts for text in parts])
        vectors: list[list[bytes]] = []
        for parts in texts:
            vectors.append(flat[: len(parts)])
            flat = flat[len(parts) :]
        return vectors

    def _model_current(self) -> bool:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
        return bool(self.model is not None and row is not None and row[0] == self.model.id)

    def _fill_vectors(self) -> None:
        """Vectors for rows that have none, or were made by another model."""
        assert self.model is not None
        missing = "SELECT count(*) FROM files WHERE id NOT IN (SELECT id FROM vectors)"
        if self._model_current() and not self.conn.execute(missing).fetchone()[0]:
            return
        with indexdoc.writing(self.conn):
            if not self._model_current():
                self.conn.execute("DELETE FROM vectors")
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('model', ?)", (self.model.id,)
                )
            rows = self.conn.execute(
                "SELECT f.id, f.rel, f.kind, d.keywords, d.body FROM files f "
                "JOIN docs d ON d.rowid = f.id WHERE f.id NOT IN (SELECT id FROM vectors)"
            ).fetchall()
            docs = [
                Doc(rel, kind, 0, 0, kw or "", body or "", "") for _, rel, kind, kw, body in rows
            ]
            for row, vectors in zip(rows, self._embed(docs), strict=True):
                self._put_vectors(row[0], vectors)

    def _diff(
        self, files: dict[str, tuple[File, str]]
    ) -> tuple[list[int], list[int], dict[str, tuple[File, str]]]:
        """Rows of files gone, rows of files changed, and the files to (re)read."""
        gone: list[int] = []
        replaced: list[int] = []
        changed: dict[str, tuple[File, str]] = {}
        seen: set[str] = set()
        for rel, doc_id, kind, size, mtime_ns in self.conn.execute(
            "SELECT rel, id, kind, size, mtime_ns FROM files"
        ):
            seen.add(rel)
            entry = files.get(rel)
            if entry is None:
                gone.append(doc_id)
            elif (entry[1], entry[0].size, entry[0].mtime_ns) != (kind, size, mtime_ns):
                replaced.append(doc_id)
                changed[rel] = entry
        changed.update((rel, entry) for rel, entry in files.items() if rel not in seen)
        return gone, replaced, changed

    # -- what a hit may show ----------------------------------------------------

    def current(self, match: Match) -> tuple[Current | None, bool]:
        """The hit's file as it is now, and whether its row says what the file says.

        A row that does not (the file changed since, or the index was edited) is
        indexed again from the bytes just read, vector and all. ``None``: the
        file cannot be read now (gone, not a regular file, no header): its row
        is dropped.
        """
        now = read_current(self.root, match.rel, match.kind)
        if now is None:
            self._rewrite(match.doc_id, None)
            return None, False
        if self._says(match.doc_id, now.doc):
            return now, True
        self._rewrite(match.doc_id, now.doc)
        return now, False

    def drop(self, match: Match) -> None:
        """Drop a match's row (its file is not one recall searches)."""
        self._rewrite(match.doc_id, None)

    def _rewrite(self, doc_id: int, doc: Doc | None) -> None:
        """Replace one row (drop it, for ``None``); a locked index is left as it is."""
        try:
            with indexdoc.writing(self.conn):
                self._delete(doc_id)
                if doc is not None:
                    self._insert([doc])
        except sqlite3.Error:
            pass  # the caller shows the file as it is now all the same

    def _says(self, doc_id: int, doc: Doc) -> bool:
        row = self.conn.execute(
            "SELECT f.rel, f.kind, f.size, f.mtime_ns, d.keywords, d.path, d.body, d.log, d.cjk "
            "FROM files f JOIN docs d ON d.rowid = f.id WHERE f.id = ?",
            (doc_id,),
        ).fetchone()
        if row is None or tuple(row[:2]) != (doc.rel, doc.kind):
            return False
        if row[3] != -1 and (row[2], row[3]) != (doc.size, doc.mtime_ns):
            return False  # stale: the file changed since its row was written
        if tuple(row[4:]) != doc.columns():
            return False  # the row says something the file does not
        if self.model is None:
            return True
        held = [
            row[0]
            for row in self.conn.execute(
                "SELECT vec FROM vectors WHERE id = ? ORDER BY chunk", (doc_id,)
            )
        ]
        if not held:
            return True  # no vector: nothing by meaning to check
        if not all(isinstance(vec, bytes) for vec in held):
            return False  # not a vector (TEXT, say): the row is made again
        fresh = self.model.embed(doc.meaning_chunks())
        if len(fresh) != len(held):
            return False
        pairs = zip(fresh, held, strict=True)
        return all(self.model.cosines(new, [old])[0] >= 0.999 for new, old in pairs)

    # -- searching --------------------------------------------------------------

    def search(
        self,
        words: list[str],
        *,
        query: str = "",
        mode: str = "words",
        kind: str | None = None,
        limit: int = 10,
    ) -> list[Match]:
        """The best ``limit`` matches, best first: by ``words`` (see
        :func:`~rouse.pack.search.query_words`), by the meaning of ``query``
        (needs a model), or ``both`` fused."""
        found: list[Match] = []
        wanted = b""
        if mode in ("words", "both"):
            found = search.by_words(self.conn, words, fts=self.fts, kind=kind)
        if mode in ("meaning", "both"):
            assert self.model is not None, "a search by meaning needs a model"
            wanted = self.model.embed([query or " ".join(words)])[0]
            rows, matrix = self._vectors(kind)
            near = search.by_meaning(rows, self.model.scores(wanted, matrix))
            found = (
                near[:limit]
                if mode == "meaning"
                else search.fuse(found, near, limit, len(search.content_words(words)))
            )
        best = found[:limit]
        if self.fts:
            search.snippets(self.conn, words, best)
        self._meaning_snippets(wanted, best)
        return best

    def version(self) -> tuple[int, int]:
        """Changes when anyone writes to the index: another connection (``data_version``)
        or this one."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes

    def _vectors(self, kind: str | None) -> tuple[list[VectorRow], Any]:
        """The vectors of files of ``kind`` and their matrix, read and stacked once while
        nothing writes to the index (this connection or another: ``data_version``)."""
        assert self.model is not None
        version = self.version()
        if version != self._stacked_at:
            self._stacked, self._stacked_at = {}, version
        if kind not in self._stacked:
            found = search.vector_rows(self.conn, kind)
            matrix = self.model.stack([vec for _, vec in found])
            self._stacked[kind] = ([row for row, _ in found], matrix)
        return self._stacked[kind]

    def _meaning_snippets(self, wanted: bytes, best: list[Match]) -> None:
        """A match by meaning alone quotes the sentence of its body nearest the query."""
        for match in best:
            if match.snippet or match.by_words:
                continue
            row = self.conn.execute("SELECT body FROM docs WHERE rowid = ?", (match.doc_id,))
            body = str((row.fetchone() or [""])[0] or "")
            if match.chunk is not None:  # the chunk that matched: its nearest sentence
                parts = chunks(body)
                body = parts[match.chunk] if match.chunk < len(parts) else body
            if self.model is not None:
                match.snippet = self.model.nearest_sentence(body, wanted)


def forget(root: Path, secret: bytes | None = None) -> None:
    """Bring the index up to date with a file just forgotten (``rouse forget``), at once
    and leaving none of its old words or vector on disk: what SQLite deletes is
    overwritten with zeros (``secure_delete``) and the full-text index's segments are
    merged, so the old rows are not kept beside the new ones. ``secret``: the walk
    cache's, which forgets the old header in the same walk. No index yet: nothing to do.
    """
    tree = cached_walk(root, secret)
    path = root / layout.STATE_DIR / FILE
    if not path.is_file():
        return
    with Index(root) as index:
        if index.stats.in_memory:
            return
        index.conn.execute("PRAGMA secure_delete = ON")
        index.refresh(tree)
        if index.fts:
            index.conn.execute("INSERT INTO docs(docs) VALUES ('optimize')")
