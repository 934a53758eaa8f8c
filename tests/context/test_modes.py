"""Read modes: every result states its mode and line count, every omission its size."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import starlette.routing

from leanctx.context.errors import ContextError, ReadInvalidMode, ReadInvalidRange, ReadMissingInput
from leanctx.context.modes import read, source_lines
from leanctx.context.tokens import count_tokens

SNIPPETS = Path(__file__).parent / "snippets"
ROUTING = Path(starlette.routing.__file__)
TEN = "".join(f"line {i}\n" for i in range(1, 11))


def test_full_is_the_file() -> None:
    r = read("a.txt", TEN, "full")
    assert (r.mode, r.text, r.line_count, r.shown_lines, r.omitted_lines, r.omitted) == ("full", TEN, 10, 10, 0, None)


def test_lines_ranges_with_numbers_and_gaps() -> None:
    r = read("a.txt", TEN, "lines:2-3,7-7,9-")
    lines = r.text.splitlines()
    assert lines[0] == "… line 1 not shown"
    assert " 2\tline 2" in lines and " 3\tline 3" in lines and " 7\tline 7" in lines
    assert "… lines 4-6 not shown (3 lines)" in lines
    assert "10\tline 10" in r.text
    assert r.shown_lines == 5 and r.omitted_lines == 5
    assert lines[-1] == "[lines:2-3,7,9-10 · 10 lines · 5 lines not shown]"


def test_overlapping_ranges_merge() -> None:
    r = read("a.txt", TEN, "lines:1-4,3-6")
    assert r.shown_lines == 6 and "lines:1-6" in r.text


@pytest.mark.parametrize("spec", ["lines:0-3", "lines:5-2", "lines:abc", "lines:11-12", "lines:1-2,x", "lines:-3"])
def test_invalid_ranges(spec: str) -> None:
    with pytest.raises(ReadInvalidRange) as info:
        read("a.txt", TEN, spec)
    assert info.value.code == "READ_INVALID_RANGE"
    assert isinstance(info.value, ValueError) and isinstance(info.value, ContextError)


@pytest.mark.parametrize("mode", ["bogus", "lines", "map:3", "full:1-2"])
def test_invalid_modes(mode: str) -> None:
    with pytest.raises(ReadInvalidMode) as info:
        read("a.txt", TEN, mode)
    assert info.value.code == "READ_INVALID_MODE"
    assert "use" in str(info.value)


def test_diff_with_line_numbers() -> None:
    old = "a\nb\nc\nd\ne\nf\ng\n"
    new = "a\nb\nC\nd\ne\nf\ng\nh\n"
    r = read("x.txt", new, "diff", old_text=old)
    assert "-3 c" in r.text and "+3 C" in r.text and "+8 h" in r.text
    assert " 2 b" in r.text  # one line of context
    assert "+2 −1" in r.text
    assert r.mode == "diff" and r.line_count == 8 and r.omitted_lines == r.line_count - r.shown_lines
    same = read("x.txt", new, "diff", old_text=new)
    assert "no changes" in same.text and same.shown_lines == 0
    with pytest.raises(ReadMissingInput) as info:
        read("x.txt", new, "diff")
    assert info.value.code == "READ_MISSING_INPUT"


def test_aggressive_strips_comments_docstrings_and_blanks() -> None:
    text = (SNIPPETS / "sample.py").read_text().replace("import os", 'import os  # the os\nS = "# not a comment"')
    r = read("sample.py", text, "aggressive")
    assert '"""A shape."""' not in r.text and "# the os" not in r.text
    assert 'S = "# not a comment"' in r.text
    assert r.shown_lines + r.omitted_lines == r.line_count
    assert f"{r.omitted_lines} comment/docstring/blank lines removed" in r.text
    js = "let a = '//x'; // c\n/* multi\nline */\nlet b = 2;\n"
    rj = read("a.js", js, "aggressive")
    assert rj.text.splitlines()[:2] == ["let a = '//x';", "let b = 2;"]
    lua = "-- comment\nlocal x = 1 -- tail\n"
    assert read("a.lua", lua, "aggressive").text.splitlines()[0] == "local x = 1"
    sql = "SELECT 1; -- why\n/* block */\nSELECT 2;\n"  # no grammar: the lexer fallback
    assert read("q.sql", sql, "aggressive").text.splitlines()[:2] == ["SELECT 1;", "SELECT 2;"]


def test_entropy_drops_low_information_lines_with_a_count() -> None:
    text = "fn main() {\n    if x {\n        go();\n    }\n}\n\n\n" + "    log();\n" * 5 + "    ====\n"
    r = read("a.rs", text, "entropy")
    assert r.text.splitlines()[:5] == ["fn main() {", "    if x {", "        go();", "    }", "}"]  # closers stay
    assert r.text.count("log();") == 5  # in code a repeated statement is one more statement
    log = read("run.log", "start\n" + "retrying\n" * 5 + "done\n", "entropy")
    assert log.text.count("retrying") == 2  # in data, repeats beyond two are dropped
    assert r.omitted_lines == r.line_count - r.shown_lines
    m = re.search(r"(\d+) low-information lines dropped \(([^)]*)\)", r.text)
    assert m and int(m.group(1)) == r.omitted_lines
    assert sum(int(x.split()[-1]) for x in m.group(2).split(", ")) == r.omitted_lines


def test_task_keeps_matches_context_and_enclosing_signature() -> None:
    text = ROUTING.read_text()
    r = read(str(ROUTING), text, "task", task="compile the path convertors")
    assert "def compile_path(" in r.text
    assert "CONVERTOR_TYPES[convertor_type]" in r.text
    assert r.shown_lines + r.omitted_lines == r.line_count
    stated = sum(int(n) for n in re.findall(r"… (\d+) lines? not shown", r.text))
    assert stated == r.omitted_lines
    assert count_tokens(r.text) < count_tokens(text) / 2
    none = read("a.txt", TEN, "task", task="kubernetes ingress")
    assert none.shown_lines == 0 and "nothing" in none.text
    with pytest.raises(ReadMissingInput):
        read("a.txt", TEN, "task")


def test_map_lists_dependencies_and_outline_with_lines() -> None:
    text = ROUTING.read_text()
    r = read(str(ROUTING), text, "map")
    assert r.text.startswith("deps: __future__, contextlib")
    assert "586 class Router [__init__:587" in r.text
    assert "private: _T:541 _wrap_gen_lifespan_context:" in r.text  # a type variable, a function
    assert "111 const PARAM_REGEX" in r.text
    assert re.search(r"\[map · 772 lines · \d+ declarations \(tree-sitter\)", r.text)
    assert count_tokens(r.text) < count_tokens(text) / 10


def test_signatures_footer_counts() -> None:
    text = (SNIPPETS / "sample.ts").read_text()
    r = read("sample.ts", text, "signatures")
    n = len(source_lines(text))
    assert r.line_count == n and r.shown_lines + r.omitted_lines == n
    assert r.shown_lines == 10  # declarations, one line each
    assert r.text.splitlines()[-1] == f"[signatures · {n} lines · {r.omitted_lines} lines not shown]"


@pytest.mark.parametrize(
    ("path", "text", "intent", "mode"),
    [
        ("a.py", TEN, None, "full"),
        ("routing.py", ROUTING.read_text(), None, "signatures"),
        ("big.py", ROUTING.read_text() * 2, None, "map"),
        ("data.json", '{"k": 1}\n' * 400, None, "full"),
        ("notes.md", "# notes\n" + "some prose line\n" * 300, None, "full"),
        ("ci.yml", "# the jobs\n" + "job:\n  runs-on: x\n" * 100, None, "aggressive"),
        ("run.log", "start\n" + "retrying\n" * 300, None, "entropy"),
        ("routing.py", ROUTING.read_text(), "give me an overview", "map"),
        ("routing.py", ROUTING.read_text(), "show the public api", "signatures"),
        ("routing.py", ROUTING.read_text(), "fix how mount handles root_path", "task"),
        ("a.py", TEN, "refactor this", "full"),
    ],
)
def test_auto_picks_a_mode_and_says_why(path: str, text: str, intent: str | None, mode: str) -> None:
    r = read(path, text, "auto", intent=intent)
    assert r.mode == mode, r.reason
    assert r.requested == "auto" and r.reason


def test_auto_diff_when_an_old_version_is_given() -> None:
    r = read("a.txt", TEN.replace("line 5", "LINE 5"), "auto", old_text=TEN, intent="what changed since my last read")
    assert r.mode == "diff" and "+5 LINE 5" in r.text


@pytest.mark.parametrize("mode", ["map", "signatures", "lines:1-3", "aggressive", "entropy", "auto"])
def test_every_mode_states_mode_and_line_count(mode: str) -> None:
    text = ROUTING.read_text()
    r = read("routing.py", text, mode)
    assert r.line_count == 772 and r.mode in r.text.splitlines()[-1] and "772 lines" in r.text.splitlines()[-1]
    if r.omitted_lines:
        assert r.omitted and (str(r.omitted_lines) in r.text)


def test_task_mode_finds_an_exact_identifier_among_its_siblings() -> None:
    """``func_77`` must not be reduced to ``func`` (which matches every ``func_N``)."""
    src = "".join(f"def func_{i}(x):\n    return x + {i}\n\n" for i in range(200))
    r = read("mod.py", src, "task", task="fix the bug in func_77 return value")
    assert "def func_77(x):" in r.text
    first = next(ln for ln in r.text.splitlines() if "def func_" in ln)
    assert "func_77" in first  # ranked first, not drowned by func_0..func_20


@pytest.mark.parametrize("line", ["continue", "break", "return", "else:", "try:", "finally:", "default:",
                                  "} else {", "break;", "return;", "x = 0", "i++;"])
def test_entropy_never_drops_control_flow_or_short_statements(line: str) -> None:
    """Dropping ``continue`` (or ``else:``, ``x = 0``) would show other code than the file holds."""
    text = f"def f(xs):\n    for x in xs:\n        if x < 0:\n            {line}\n        out(x)\n"
    r = read("a.py", text, "entropy")
    assert f"            {line}" in r.text.splitlines()


def test_entropy_drops_rulers_but_keeps_closers_in_code() -> None:
    """A closing delimiter is structure (the audit's finding 5); a comment ruler is not."""
    text = "fn main() {\n    go();\n    // ========\n}\n#endif\n"
    r = read("a.rs", text, "entropy")
    body = r.text.splitlines()[:-1]
    assert body == ["fn main() {", "    go();", "}", "#endif"]


def test_entropy_keeps_repeated_control_flow_in_code() -> None:
    """The third ``else:`` of a file is as much code as the first."""
    fns = "".join(f"def f{i}(a, b):\n    if a:\n        return a\n    else:\n        return b\n" for i in range(4))
    r = read("a.py", fns, "entropy")
    body = r.text.splitlines()[:-1]
    assert body.count("    else:") == 4 and body.count("        return b") == 4
