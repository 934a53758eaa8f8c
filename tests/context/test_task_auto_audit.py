"""Audit of ``auto`` and ``task``: a small file is sent whole whatever the intent; ``auto`` never
picks a view that shows nothing; ``task`` stems singular and inflected forms alike and sends
the whole body (bounded) of a definition the task names. Line numbers are the file's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from leanctx.context.modes import read, source_lines
from leanctx.context.modes.task import mentions, stem, terms

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
TEXTWRAP = Path(sysconfig.get_paths()["stdlib"]) / "textwrap.py"
SMALL = '''def parse(text):
    parts = text.split(",")
    out = []
    for p in parts:
        out.append(int(p) + "1")
    return out
'''
JOBS = '''import subprocess


def process(job):
    status = job.run()
    if status != 0:
        log(job, status)
    return status


def log(job, code):
    print(job.name, code)
'''


def _numbered(text: str) -> dict[int, str]:
    """``N<TAB>line`` rows of a task answer, by line number."""
    out: dict[int, str] = {}
    for row in text.splitlines():
        m = re.match(r"^\s*(\d+)\t(.*)$", row)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


def _check_counts(r, src: str) -> None:  # type: ignore[no-untyped-def]
    """Every numbered row is the file's own line; the gaps add up to what the footer omits."""
    lines = source_lines(src)
    for k, row in _numbered(r.text).items():
        assert row == lines[k - 1], k
    assert r.shown_lines + r.omitted_lines == r.line_count == len(lines)
    assert len(_numbered(r.text)) == r.shown_lines
    stated = sum(int(n) for n in re.findall(r"^… (\d+) lines? not shown$", r.text, re.MULTILINE))
    assert stated == r.omitted_lines


# --- finding 6: auto and small files ------------------------------------------------------------


@pytest.mark.parametrize("intent", ["api", "layout", "show the public api",
                                    "give me an overview", "explore the structure", "port it"])
def test_auto_sends_a_small_file_whole_whatever_the_intent(intent: str) -> None:
    r = read("small.py", SMALL, "auto", intent=intent)
    assert r.mode == "full" and r.text == SMALL, r.reason
    assert r.reason and r.reason.startswith("small file (6 lines)") and repr(intent) in r.reason


@pytest.mark.parametrize("intent", ["fix the type error in parse", "debug the crash", "the api is broken"])
def test_auto_a_fix_needs_the_bodies_whatever_else_the_intent_names(intent: str) -> None:
    src = "".join(f"def parse_{i}(s: str) -> int:\n    n = int(s) + {i}\n    return n\n\n" for i in range(75))
    r = read("parse.py", src, "auto", intent=intent + " of parse_7")  # 300 lines: not small, not large
    assert r.mode == "task" and "    n = int(s) + 7" in r.text, r.reason
    assert read("small.py", SMALL, "auto", intent=intent).text == SMALL


def test_auto_small_file_reason_says_the_intent_was_overruled() -> None:
    r = read("small.py", SMALL, "auto", intent="api")
    assert r.reason == "small file (6 lines); intent 'api' matches 'signatures', but a small file is sent whole"


def test_auto_edit_intent_on_a_small_file_is_still_its_decision() -> None:
    r = read("small.py", SMALL, "auto", intent="refactor this")
    assert r.mode == "full" and r.reason == "intent 'refactor this' matches 'full' (6 lines)"


def test_auto_small_file_with_chars_over_the_limit_is_not_small() -> None:
    """``small`` is the existing rule: lines and characters; a long-lined file still follows the intent."""
    text = "".join(f"def f{i}(x):\n    return '{'y' * 90}'\n" for i in range(60))  # 120 lines, > 6000 chars
    assert len(text) > 6000
    assert read("wide.py", text, "auto", intent="api").mode == "signatures"


# --- auto never picks a view that shows nothing --------------------------------------------------


def test_auto_intent_that_matches_no_line_falls_back_to_the_outline() -> None:
    src = "".join(f"def step_{i}(x):\n    y = x * {i}\n    return y + 1\n\n" for i in range(100))
    r = read("steps.py", src, "auto", intent="port it to kubernetes")
    assert r.mode == "signatures" and r.shown_lines > 0, r.reason
    assert r.reason == ("python source of 400 lines: declarations without bodies; "
                        "intent 'port it to kubernetes' matches no line of the file")


def test_auto_edit_intent_on_a_large_file_that_names_nothing_gives_the_map() -> None:
    src = "".join(f"def step_{i}(x):\n    y = x * {i}\n    return y + 1\n\n" for i in range(250))
    r = read("steps.py", src, "auto", intent="rewrite the kubernetes ingress")
    assert r.mode == "map" and r.shown_lines > 0, r.reason
    assert str(r.reason).endswith("; intent 'rewrite the kubernetes ingress' asks to edit, but matches no line of the file")
    named = read("steps.py", src, "auto", intent="rewrite step_7")
    assert named.mode == "task" and "def step_7(x):" in named.text


# --- finding 7: stemming ---------------------------------------------------------------------------


@pytest.mark.parametrize("forms", [
    ("process", "processes", "processed", "processing"),
    ("status", "statuses"),
    ("wrap", "wraps", "wrapped", "wrapping"),
    ("parse", "parses", "parsed", "parsing"),
    ("run", "runs", "running"),
    ("class", "classes"),
    ("entry", "entries"),
    ("retry", "retries", "retried", "retrying"),
    ("cache", "caches", "cached", "caching"),
    ("match", "matches", "matched", "matching"),
    ("box", "boxes"),
    ("commit", "commits", "committed", "committing"),
    ("add", "added", "adding"),
    ("setting", "settings"),
    ("string", "strings"),
    ("schema", "schemas"),
    ("embed", "embeds"),
    ("need", "needs", "needing"),
    ("queue", "queues", "queued", "queueing", "queuing"),
    ("call", "calls", "called", "calling"),
    ("diff", "diffs", "diffing"),
    ("copy", "copies", "copied"),
    ("key", "keys"),
])
def test_stem_meets_singular_and_inflected_forms(forms: tuple[str, ...]) -> None:
    stems = {stem(f) for f in forms}
    assert len(stems) == 1, {f: stem(f) for f in forms}


@pytest.mark.parametrize(("a", "b"), [("string", "str"), ("thing", "th"), ("status", "statu"), ("address", "addr")])
def test_stem_keeps_apart_what_differs(a: str, b: str) -> None:
    assert stem(a) != stem(b)


def test_stop_words_stay_stop_words_when_inflected() -> None:
    assert terms("classes methods functions files changes updates fixes") == set()
    assert terms("processes statuses") == {stem("process"), stem("status")}


def test_mentions_is_whether_a_task_view_would_show_a_line() -> None:
    assert mentions("why do retries fail", "def retry(n):\n    return n\n")  # retry -> retri: y as i
    assert mentions("statuses", JOBS) and mentions("processes", JOBS)
    assert not mentions("port it to kubernetes", JOBS)
    assert not mentions("the y variable", JOBS)  # y is too short to be a term; variable is not in it
    assert not mentions("fix the code", JOBS)  # stop words only


def test_task_matches_plural_words_against_singular_code() -> None:
    r = read("jobs.py", JOBS, "task", task="why do processes report the wrong statuses")
    assert r.shown_lines > 0
    shown = _numbered(r.text)
    assert shown[4] == "def process(job):" and shown[5] == "    status = job.run()"
    _check_counts(r, JOBS)


# --- finding 8: the body of a named definition ---------------------------------------------------


def test_task_sends_the_whole_body_of_the_function_it_names() -> None:
    src = TEXTWRAP.read_text()
    lines = source_lines(src)
    start = next(i for i, ln in enumerate(lines, 1) if ln.startswith("def dedent("))
    end = next(i for i in range(start + 1, len(lines) + 1) if lines[i - 1].startswith("def "))  # the next def
    body_end = max(i for i in range(start, end) if lines[i - 1].strip())
    r = read(str(TEXTWRAP), src, "task", task="dedent")
    shown = _numbered(r.text)
    assert all(k in shown for k in range(start, body_end + 1)), sorted(set(range(start, body_end + 1)) - set(shown))
    assert f"body of dedent ({start}-{body_end})" in r.text.splitlines()[-1]
    _check_counts(r, src)
    assert r.shown_lines < r.line_count / 4  # the rest of the file stays out


def test_task_names_a_definition_by_its_parts_or_whole_identifier() -> None:
    src = "".join(f"def func_{i}(x):\n" + "".join(f"    x += {k}\n" for k in range(12)) + "    return x\n\n"
                  for i in range(60))
    r = read("mod.py", src, "task", task="func_17 returns the wrong total")
    shown = _numbered(r.text)
    start = 1 + 15 * 17
    assert all(k in shown for k in range(start, start + 14))
    assert not any(shown.get(1 + 15 * i, "").startswith("def func_") for i in range(60) if i != 17)
    _check_counts(r, src)


def test_task_caps_a_huge_named_body_and_says_how_much_is_left_out() -> None:
    src = ("def helper():\n    return 1\n\n\ndef huge(x):\n"
           + "".join(f"    x = x + {k}\n" for k in range(500)) + "    return x\n")
    r = read("big.py", src, "task", task="huge")
    shown = _numbered(r.text)
    assert shown[5] == "def huge(x):" and 6 in shown and 50 in shown
    assert r.shown_lines < 150
    footer = r.text.splitlines()[-1]
    assert re.search(r"first \d+ of 502 lines of huge \(5-506\)", footer), footer
    assert re.search(r"^… \d+ lines not shown$", r.text, re.MULTILINE)
    _check_counts(r, src)


def test_task_bounds_the_bodies_of_many_named_definitions() -> None:
    src = "".join(f"class C{i}:\n    def handle(self, x):\n" + "".join(f"        x += {k}\n" for k in range(40))
                  + "        return x\n\n" for i in range(30))
    r = read("many.py", src, "task", task="handle")
    assert 0 < r.shown_lines < r.line_count / 3
    footer = r.text.splitlines()[-1]
    assert "body of handle (2-43), body of handle (46-87), body of handle (90-131) and 3 more bodies; " in footer
    assert "24 more named definitions over the 240-line bound" in footer
    _check_counts(r, src)


# --- end to end, as the audit reproduced them ----------------------------------------------------


def _cli(cwd: Path, *args: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(cwd / "lc.db"), LEAN_CTX_AGENT_ID="audit", LEAN_CTX_NO_DAEMON="1",
               LEAN_CTX_HOME=str(cwd / "home"))
    p = subprocess.run([LEAN_CTX, "--project", str(cwd), "read", *args, "--json"], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    out: dict[str, object] = json.loads(p.stdout)
    return out


def test_cli_auto_small_file_and_task_named_body(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(SMALL)
    (tmp_path / "textwrap.py").write_text(TEXTWRAP.read_text())
    a = _cli(tmp_path, "small.py", "--intent", "fix the type error in parse")
    assert a["mode"] == "full" and 'out.append(int(p) + "1")' in str(a["text"])
    t = _cli(tmp_path, "textwrap.py", "-m", "task", "--task", "dedent")
    assert t["mode"] == "task"
    text = str(t["text"])
    for row in ("    margin = None", "    for indent in indents:", "                    margin = margin[:i]", "    return text"):
        assert re.search(rf"^\d+\t{re.escape(row)}$", text, re.MULTILINE), row
