"""One-letter query terms (``return x``, ``if n``, ``x = 0``) are searched only as a phrase with
their neighbours, so that a lone letter (an f-string's ``f``, ``X0``, ``0x20``) no longer drags in
unrelated chunks; plain word queries stay an OR of their words."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.cache.code_chunks import match_expression, split_terms
from leanctx.cache.code_index import CodeIndex
from leanctx.ops.files import list_files
from leanctx.ops.search import search

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    """One file with ``return x``; many with ``return`` and an ``x`` (or ``f``, ``n``) elsewhere."""
    root = tmp_path / "proj"
    write(root, "ident.py", "def ident(x):\n    '''Returns exactly its argument.'''\n    return x\n")
    write(root, "first.py", "def first(xs):\n    return xs[0]\n\ndef header_index():\n    headerIdx = 0\n"
          "    return headerIdx\n")
    write(root, "count.py", "def count(n):\n    total = 0\n    if n < 0:\n        return 0\n    return n\n")
    for i in range(6):
        write(root, f"noise{i}.py", (
            f"X0 = 0\nMASK = 0x20\n\ndef helper{i}(value):\n    if not value:\n        return None\n"
            f"    label = f\"{{value}}\"\n    return label + 'x'\n"
            "def fetch(url):\n    return url\n"))
    write(root, "names.py", "from typing import NoReturn\n\nclass XFail:\n    pass\n\ndef stop() -> NoReturn:\n"
          "    raise KeyboardInterrupt\n")
    return root


def refresh(lc: LeanCtx, root: Path) -> CodeIndex:
    idx = CodeIndex(lc.store)
    idx.refresh(str(root), str(root), list_files(root, use_git=False).files)
    return idx


def in_order(query: str, line: str) -> bool:
    words = re.findall(r"[^\W_]+", query)
    return re.search("(?i)" + ".*?".join(rf"\b{re.escape(w)}\b" for w in words), line) is not None


# --- the match expression ------------------------------------------------------------------------

def test_one_letter_terms_join_their_neighbours_as_a_phrase() -> None:
    assert match_expression("return x") == '{path body} : "return" + "x"'
    assert match_expression("for k, v in") == '{path body} : "for" + "k," + "v" + "in"'
    # the other words stay an OR (at least one of them), beside the required phrase; the whole
    # query, a phrase that implies every part, ranks the chunks holding it first
    assert match_expression("except Exception as e") == (
        '({path body} : "as" + "e") AND ("except" OR "Exception" OR {path body} : "except" + "Exception" + "as" + "e")')
    # a query of short terms only is their phrase; a single letter is still searchable, anywhere
    assert match_expression("x = 0") == '{path body} : "x" + "0"'
    assert match_expression("x") == '"x"'
    # plain words are unchanged: ORed, so bm25 ranks chunks holding more of them higher
    assert match_expression("token bucket") == '"token" OR "bucket"'
    assert match_expression("pre* x") == '{path body} : "pre"* + "x"'


def test_hex_literals_are_not_identifiers() -> None:
    assert split_terms("MASK = 0x20\nclass XFail: pass\ndef stop() -> NoReturn: ...") == "no return\nx fail"


# --- the code index -------------------------------------------------------------------------------

def test_bm25_no_longer_lists_chunks_that_only_hold_the_letter(lc: LeanCtx, proj: Path) -> None:
    idx = refresh(lc, proj)
    hits, total = idx.query(str(proj), "return x")
    assert [h.path for h in hits] == ["ident.py"] and total == 1  # not X0, 0x20, 'x', NoReturn+XFail
    hits, _ = idx.query(str(proj), "if n")
    assert [h.path for h in hits] == ["count.py"]  # not "if not"
    hits, _ = idx.query(str(proj), "x")  # a lone letter still finds the letter
    assert {h.path for h in hits} >= {"ident.py", *(f"noise{i}.py" for i in range(6))}
    hits, _ = idx.query(str(proj), "XFail")
    assert [h.path for h in hits] == ["names.py"]


def test_plain_word_queries_still_match_any_of_their_words(lc: LeanCtx, proj: Path) -> None:
    idx = refresh(lc, proj)
    hits, total = idx.query(str(proj), "fetch ident")
    assert total == 7 and {h.path for h in hits} == {"ident.py", *(f"noise{i}.py" for i in range(6))}


def test_the_whole_query_as_a_phrase_ranks_first(lc: LeanCtx, tmp_path: Path) -> None:
    """``except Exception as e`` requires ``as e``; a chunk holding the words in order outranks
    chunks with more ``as e`` and an ``Exception`` elsewhere (the whole query is an optional
    phrase of the expression: it ranks, it does not filter)."""
    root = tmp_path / "p"
    for i in range(3):
        write(root, f"other{i}.py", "def run(job):\n    try:\n        job()\n    except KeyError as e:\n"
              "        log(e)\n    except OSError as e:\n        raise Exception(e)\n")
    write(root, "exact.py", "def run(job):\n    try:\n        job()\n    except Exception as e:\n"
          "        log(e)\n        return None\n    finally:\n        job.close()\n")
    idx = refresh(lc, root)
    hits, total = idx.query(str(root), "except Exception as e")
    assert total == 4 and hits[0].path == "exact.py"
    ans = search(lc, root, "except Exception as e", method="bm25", record=False)
    assert (ans.hits[0].path, ans.hits[0].line) == ("exact.py", 4)


# --- search ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["bm25", "auto"])
def test_search_shows_the_phrase_line(lc: LeanCtx, proj: Path, method: str) -> None:
    ans = search(lc, proj, "return x", method=method, limit=10, record=False)
    assert ans.hits and all(in_order("return x", h.snippet) for h in ans.hits), ans.text
    assert (ans.hits[0].path, ans.hits[0].line, ans.hits[0].snippet) == ("ident.py", 3, "return x")
    ans = search(lc, proj, "if n", method=method, limit=10, record=False)
    assert [(h.path, h.line) for h in ans.hits][:1] == [("count.py", 3)]
    # the fused search's regex half matches a one-letter word at either end of the query as a
    # word, as the index does: not "if not", "return xs", "headerIdx = 0"
    assert all(in_order("if n", h.snippet) for h in ans.hits), ans.text
    ans = search(lc, proj, "x = 0", method=method, limit=10, record=False)
    assert "headerIdx" not in ans.text
    assert search(lc, proj, "return x", method="regex", record=False).total == 2  # --regex: the pattern as given


def test_a_hit_is_shown_at_the_line_holding_the_required_phrase(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root, "a.py", "def check(value, x):\n    if value is None:\n        return\n    if x is ready:\n        go()\n")
    ans = search(lc, root, "if x is None", method="bm25", record=False)
    assert [(h.path, h.line) for h in ans.hits] == [("a.py", 4)]  # "if x is", not the line with more words


def test_the_regex_half_keeps_a_query_that_is_not_a_pattern(lc: LeanCtx, proj: Path) -> None:
    write(proj, "odd.py", "value = f(x\n")
    ans = search(lc, proj, "f(x", record=False)  # does not compile: matched literally, ends on a word
    assert [(h.path, h.line) for h in ans.hits] == [("odd.py", 1)]


def test_cli_bm25_search_for_a_short_term_phrase(tmp_path: Path, proj: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "cli.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}
    env.pop("LEAN_CTX_SESSION_ID", None)
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "--json", "search", "return x", "--bm25"],
                       check=False, capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert [(h["path"], h["line"]) for h in out["hits"]] == [("ident.py", 3)] and out["total"] == 1
