"""What a count costs: the per-user ranks cache (pinned digest), the pure-Python counter for
short work (tiktoken's counts, exactly) and tiktoken built only when it pays."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leanctx.context import tokens, tokens_cache, tokens_pure
from leanctx.context.errors import TokenizerHashMismatch

REPO = Path(__file__).resolve().parents[2]


def _verified_ranks(name: str) -> dict[bytes, int]:
    return tokens._parse_ranks(tokens._read_verified(name, tokens.vocab_path(name)))


def _run(code: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LEAN_CTX_HOME": str(home), **env}
    return subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, env=full, timeout=120)


# --- the ranks cache -------------------------------------------------------------------------
@pytest.mark.parametrize("name", tokens.ENCODING_NAMES)
def test_pinned_digest_is_that_of_the_verified_vocabulary(name: str) -> None:
    ranks = _verified_ranks(name)
    payload = tokens_cache.encode(ranks)
    assert payload is not None
    assert hashlib.sha256(payload).hexdigest() == tokens_cache.RANKS_SHA256[name]
    view = tokens_cache.SortedRanks(payload)
    assert view.to_dict() == ranks and len(view) == len(ranks)
    for token in list(ranks)[::997]:
        assert view.get(token) == ranks[token] and token in view
    for absent in (b"\x00\x01\x02\x03\x04", b"zzzzqqqqxxxx" * 3, "é".encode() * 40):
        assert view.get(absent) is None and view.get(absent, -1) == -1 and absent not in view


def test_cache_dir_follows_the_lean_ctx_home_then_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path / "h"))
    assert tokens_cache.cache_dir() == str(tmp_path / "h" / "cache")
    monkeypatch.delenv("LEAN_CTX_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tokens_cache.cache_dir() == str(tmp_path / "xdg" / "lean-ctx")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tokens_cache.cache_dir() == str(tmp_path / ".cache" / "lean-ctx")


_COUNT = """
import sys
from leanctx.context import tokens
reads = []
real = tokens._read_verified
tokens._read_verified = lambda *a: reads.append(a[0]) or real(*a)
n = tokens.count_tokens("hello world — it's 42 → ok", sys.argv[1] if len(sys.argv) > 1 else "o200k_base")
print(n, len(reads), "tiktoken" in sys.modules)
"""


def test_first_process_fills_the_cache_the_next_reads_no_vocabulary(tmp_path: Path) -> None:
    first = _run(_COUNT, tmp_path)
    assert first.returncode == 0, first.stderr
    files = list((tmp_path / "cache" / "tokenizers").glob("o200k_base-*.ranks"))
    assert len(files) == 1 and files[0].read_bytes().startswith(tokens_cache.MAGIC)
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"
    second = _run(_COUNT, tmp_path)
    assert second.returncode == 0, second.stderr
    n1, reads1, tk1 = first.stdout.split()
    n2, reads2, tk2 = second.stdout.split()
    assert n1 == n2 == str(len(tokens.get_encoding().encode_ordinary("hello world — it's 42 → ok")))
    assert (reads1, reads2) == ("1", "0")  # the vocabulary was read and verified once
    assert tk1 == tk2 == "False"  # a short count builds no tiktoken encoder (nor imports tiktoken)


def test_a_tampered_cache_is_ignored_and_rewritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path))
    name = "cl100k_base"
    key = tokens_cache.source_key(tokens.vocab_path(name))
    assert key is not None
    ranks = _verified_ranks(name)
    assert tokens_cache.store(name, key, ranks)
    path = next((tmp_path / "cache" / "tokenizers").glob(f"{name}-*.ranks"))
    data = bytearray(path.read_bytes())
    # swap the ranks of two tokens: a well-formed file whose ranks are wrong
    data[-8:-4], data[-4:] = data[-4:], data[-8:-4]
    path.write_bytes(bytes(data))
    assert tokens_cache.load(name, key) is None  # the pinned digest refuses it
    monkeypatch.setattr(tokens, "_cache", {})
    assert tokens._load_ranks(name) == ranks  # read from the verified vocabulary instead...
    again = tokens_cache.load(name, key)  # ...and the cache rewritten
    assert again is not None and again.to_dict() == ranks
    path.write_bytes(b"garbage")
    assert tokens_cache.load(name, key) is None


def test_a_changed_vocabulary_is_verified_again_despite_the_cache(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path / "home"))
    name = "cl100k_base"
    good = tmp_path / "good" / f"{name}.tiktoken.gz"
    good.parent.mkdir()
    good.write_bytes(tokens.vocab_path(name).read_bytes())
    monkeypatch.setattr(tokens, "vocab_path", lambda n: good)
    monkeypatch.setattr(tokens, "_cache", {})
    assert tokens.count_tokens("x y", name) == 2  # fills the cache for this file
    assert list((tmp_path / "home" / "cache" / "tokenizers").glob(f"{name}-*.ranks"))
    lines = gzip.decompress(good.read_bytes()).split(b"\n")
    token, rank = lines[7].split()
    lines[7] = token + b" " + str(int(rank) + 1).encode()
    good.write_bytes(gzip.compress(b"\n".join(lines)))  # same path, new content (and mtime)
    os.utime(good, ns=(1, 1))
    monkeypatch.setattr(tokens, "_cache", {})
    with pytest.raises(TokenizerHashMismatch):
        tokens.count_tokens("x", name)


def test_prune_keeps_the_newest_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAN_CTX_HOME", str(tmp_path))
    name = "cl100k_base"
    ranks = _verified_ranks(name)
    for i in range(tokens_cache.KEEP + 3):
        assert tokens_cache.store(name, f"key {i}", ranks)
        last = next(p for p in (tmp_path / "cache" / "tokenizers").iterdir() if p.stat().st_mtime_ns ==
                    max(q.stat().st_mtime_ns for q in (tmp_path / "cache" / "tokenizers").iterdir()))
        os.utime(last, ns=(i * 10**9, i * 10**9))
    left = list((tmp_path / "cache" / "tokenizers").glob(f"{name}-*.ranks"))
    assert len(left) == tokens_cache.KEEP
    kept = tokens_cache.load(name, f"key {tokens_cache.KEEP + 2}")  # the one just written stays
    assert kept is not None and kept.to_dict() == ranks
    assert not tokens_cache.store("o200k_base", "k", ranks)  # ranks without the pinned digest are not written


# --- the pure-Python counter: tiktoken's counts ----------------------------------------------
def _tiktoken_count(text: str, name: str) -> int:
    return len(tokens.get_encoding(name).encode_ordinary(text))


_VIEWS: dict[str, tokens_cache.SortedRanks] = {}


def _pure(name: str, view: bool = False) -> tokens_pure.PureCounter:
    """A counter with the ranks as a dict, or looked up in place in the cache's payload."""
    ranks = tokens.get_encoding(name)._mergeable_ranks
    if view:
        if name not in _VIEWS:
            payload = tokens_cache.encode(ranks)
            assert payload is not None
            _VIEWS[name] = tokens_cache.SortedRanks(payload)
        return tokens_pure.PureCounter(name, _VIEWS[name], budget=1 << 40)
    return tokens_pure.PureCounter(name, ranks, budget=1 << 40)


_SYMBOL_CHARS = [chr(c) for a, b in tokens_pure.SYMBOLS for c in range(a, b + 1)]


def test_symbols_are_neither_letters_digits_marks_nor_spaces() -> None:
    for ch in _SYMBOL_CHARS:
        cat = unicodedata.category(ch)
        assert cat[0] in "PS" or cat == "Cn", (hex(ord(ch)), cat)
        assert not ch.isspace()
    assert all(tokens_pure.eligible(ch) for ch in _SYMBOL_CHARS)
    for ch in "éÉßñ日ª²¹¼µ❶\u00a0\u2028\u205f\u00ad\u200b\u200d\u0301\ufe0f\U0001d400٣":
        assert not tokens_pure.eligible(f"ok {ch} ok"), hex(ord(ch))


@pytest.mark.parametrize("name", tokens.ENCODING_NAMES)
def test_every_symbol_in_context_counts_as_tiktoken_does(name: str) -> None:
    pure = _pure(name, view=True)
    probes = ["{c}", "a{c}b", " {c}", "{c}\n", "x{c}{c}{c} y", "'{c}", "{c}'s", "1{c}2", "{c}Word", "\n{c}\n",
              "  {c}  ", "A{c}", "{c}/x", "// {c} -> ok", "{c}{c}"]
    bad = [(hex(ord(c)), p) for c in _SYMBOL_CHARS for p in probes
           if pure.count(t := p.replace("{c}", c)) != _tiktoken_count(t, name)]
    assert not bad, bad[:10]


@pytest.mark.parametrize("name", tokens.ENCODING_NAMES)
def test_repository_files_count_as_tiktoken_does(name: str) -> None:
    pure, in_place = _pure(name), _pure(name, view=True)
    seen = 0
    for path in sorted(REPO.glob("leanctx/**/*.py"))[:150] + sorted(REPO.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for piece in [text, *text.splitlines(keepends=True)[:200]]:
            if tokens_pure.eligible(piece):
                seen += 1
                assert pure.count(piece) == _tiktoken_count(piece, name), (path, piece[:80])
                if seen % 7 == 0:
                    assert in_place.count(piece) == _tiktoken_count(piece, name), (path, piece[:80])
    assert seen > 1000


_ALPHABET = st.sampled_from(
    [chr(i) for i in range(128)] + list(" \t\n\r'sStTdDmMlLvVeErR/09aZ") * 3 + ["—", "→", "·", "…", "“", "’", "🚀", "×"]
)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=60))
def test_random_text_counts_as_tiktoken_does(text: str) -> None:
    for name in tokens.ENCODING_NAMES:
        expected = _tiktoken_count(text, name)
        assert _pure(name).count(text) == expected and _pure(name, view=True).count(text) == expected


def test_long_runs_and_line_ends() -> None:
    for name in tokens.ENCODING_NAMES:
        pure = _pure(name)
        for text in ["x" * 500, "1234567890" * 30, " " * 300 + "x", "a  \n\n  \t\r\n", "trailing   ", "\n\n\n",
                     "'S 'LL 'Ve 're 'd", "CamelCaseWORDSandMore", "a/b//c\r\n/d", "x = [1, 2]  # ok\n" * 40]:
            assert pure.count(text) == _tiktoken_count(text, name), (name, text[:40])


# --- when tiktoken is built ------------------------------------------------------------------
def test_tiktoken_is_built_once_more_than_the_budget_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_cache", {})
    tok = tokens._tokenizer("o200k_base")
    assert tokens.count_tokens("short text") == 2 and tok.encoding is None
    assert tokens.count_tokens("Ünïcödé") == _tiktoken_count("Ünïcödé", "o200k_base")  # not eligible: tiktoken
    assert tok.encoding is not None
    monkeypatch.setattr(tokens, "_cache", {})
    tok = tokens._tokenizer("o200k_base")
    line = "word " * 99 + "\n"
    costs = tokens.token_costs([line] * (tokens.PURE_BUDGET // len(line) - 1))
    assert tok.encoding is None and tok.pure is not None and tok.pure.budget < len(line) * 2
    assert tokens.cumulative_tokens([line] * 3)[-1] == 3 * costs[0]  # past the budget: tiktoken
    assert tok.encoding is not None
    assert tokens.get_encoding("o200k_base") is tok.encoding


def test_a_huge_word_goes_to_tiktoken_not_to_a_quadratic_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    import random
    import time

    word = "".join(random.Random(3).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20_000))
    monkeypatch.setattr(tokens, "_cache", {})
    tok = tokens._tokenizer("o200k_base")
    assert tokens.token_costs(["short line\n"]) == [3] and tok.encoding is None
    t = time.process_time()
    costs = tokens.token_costs(["a b c\n", word, "tail\n"])  # 20,000² / 16 is over the budget: refused before merging
    assert time.process_time() - t < 3.0  # merging it here would take ~10 s
    assert costs == [_tiktoken_count(x, "o200k_base") for x in ("a b c\n", word, "tail\n")]
    assert tok.encoding is not None
    with pytest.raises(tokens_pure.OverBudget):
        tokens_pure.PureCounter("o200k_base", tok.ranks, budget=1000).count(word[:500])
