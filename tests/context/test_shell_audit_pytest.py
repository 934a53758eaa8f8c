"""Audit of the pytest pattern on real outputs (tests/fixtures/shell_audit/pytest_*: the raw text
captured on this machine, and a JSON of the corpus's shape: command, exit code, the streams and
the facts that must survive; kept out of tests/fixtures/shell so the benchmark stays comparable).

Found: a failing test whose title is wider than the terminal gets a ``_ title _`` header, which was
not read as one (its assertion lines and the next tests' were dropped); ``path:N: in fn`` frames of
``--tb=short`` and collection errors, the ``--tb=line`` message lines, everything of a
``--tb=native`` traceback, and located warnings in the summary (``path:N: RuntimeWarning: ...``)
were dropped or not facts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.shell import compress, split_lines
from leanctx.context.tokens import count_tokens

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "shell_audit"
CASES = sorted(FIXTURES.glob("pytest_*.json"))
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
_INLINE = re.compile(r"\[… (\d+) lines? omitted \(([^)]*)\) · expand \{archive\}\]")
_FOOTER = re.compile(r"\[… (\d+) lines? omitted: ([^\]]*) · expand \{archive\}\]")
_CUT = re.compile(r"\[… \d+ chars(?: and \d+ progress frames?)? of line (\d+) omitted · expand \{archive\}\]")


def _case(name: str) -> tuple[dict, str]:
    path = FIXTURES / f"{name}.json"
    return json.loads(path.read_text()), path.with_suffix(".txt").read_text()


def _run(name: str):
    fx, raw = _case(name)
    return compress(fx["command"], raw, "", fx["exit_code"])


def _reasons(text: str) -> dict[str, int]:
    """Omission reason -> lines, as the markers of ``text`` state them."""
    out: dict[str, int] = {}
    for n, reason in _INLINE.findall(text):
        out[reason] = out.get(reason, 0) + int(n)
    for _, parts in _FOOTER.findall(text):
        for part in parts.split(", "):
            n, reason = part.split(" ", 1)
            out[reason] = out.get(reason, 0) + int(n)
    return out


def test_the_audit_cases_are_here() -> None:
    assert len(CASES) >= 13
    for path in CASES:
        fx = json.loads(path.read_text())
        assert {"command", "exit_code", "must_keep"} <= fx.keys() and fx["must_keep"]
        assert path.with_suffix(".txt").read_text() == fx["stdout"] + fx["stderr"]


@pytest.mark.parametrize("streams", [True, False], ids=["streams", "one-file"])
@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_real_pytest_output_keeps_every_fact_and_accounts_for_every_line(path: Path, streams: bool) -> None:
    fx, raw = _case(path.stem)
    if streams:  # as `lean-ctx shell` runs it
        c = compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"])
    else:  # as `lean-ctx compress FILE` reads a saved output
        c = compress(fx["command"], raw, "", fx["exit_code"])
    assert c.pattern == "pytest"
    lost = [f for f in fx["must_keep"] if f not in c.text]
    assert not lost, f"lost must-keep facts {lost}"
    assert not [f for f in c.must_keep if f not in c.text]
    assert "[kept]" not in c.text  # no fact was rewritten away and restored at the end
    assert f"[exit {fx['exit_code']}]" in c.text
    assert c.sent_tokens == count_tokens(c.text) < c.raw_tokens
    assert c.raw_lines == len(split_lines(raw)) == c.kept_lines + c.folded_lines + c.omitted_lines + c.blank_lines
    assert sum(o.count for o in c.omissions) == c.omitted_lines
    stated = sum(_reasons(c.text).values()) + len(set(_CUT.findall(c.text)))
    assert stated == c.omitted_lines, "the markers must state every omitted line"


# ----------------------------------------------------------------------------- V1: long titles


def test_a_title_wider_than_the_terminal_still_opens_a_failure_block() -> None:
    c = _run("pytest_long_ids_min")
    for k in range(1, 8):
        assert f"__ test_roundtrip_preserves_every_field[customer-record-00{k}-with-a-long-descriptive-identifier] __" in c.text
        assert f"E assert {54 + k} == 54" in c.text
    assert "assertion detail" not in c.text  # each block has its own count of E lines
    assert "8 repeated summary lines" in c.text  # the 7 FAILED lines and their heading


@pytest.mark.parametrize("name", ["pytest_tb_auto", "pytest_v_rA", "pytest_xdist", "pytest_xdist_v"])
def test_every_failure_keeps_its_assertion_whatever_the_width_of_the_titles(name: str) -> None:
    t = _run(name).text
    for given in (9, 30, 51, 72, 93, 114):
        assert f"assert {given} == {given + 1}" in t
        assert f"__ test_triple_roundtrip_with_a_rather_long_descriptive_name[{'alpha-' * 8}{given // 3}-{given}-{given + 1}] __" in t


def test_a_strict_xpass_states_its_reason_and_xdist_worker_lines_are_not_called_source() -> None:
    t = _run("pytest_xdist").text
    assert "[XPASS(strict)] should fail but passes" in t
    reasons = _reasons(t)
    assert reasons.get("xdist worker lines") == 11 and "[gw" not in t
    assert "traceback source" in reasons


def test_passed_lines_of_the_short_summary_are_counted_not_shown() -> None:
    c = _run("pytest_v_rA")
    assert "PASSED tests/" not in c.text and "36 passed" in c.text
    assert "XFAIL tests/test_params.py::test_known_bug - known bug #123" in c.text


_HEAD = ("============================= test session starts ==============================\n"
         "rootdir: /home/dev/proj\ncollected 2 items\n\nmod.py F  [ 50%]\ntests/test_a.py F  [100%]\n\n"
         "=================================== FAILURES ===================================\n")


def test_a_doctest_keeps_what_it_expected_and_what_it_got_and_pytest_words_are_not_source() -> None:
    out = _HEAD + (
        "___________________________ [doctest] mod.double _______________________________\n"
        "005     >>> double(2)\nExpected:\n    5\nGot:\n    4\n\n/home/dev/proj/mod.py:5: DocTestFailure\n"
        "_________________________________ test_a _________________________________\n\n"
        "    def test_a():\n        total = 1\n>       assert total == 2\nE       assert 1 == 2\n\n"
        "total      = 1\nother      = 'a value long enough that announcing it costs less than it'\n\n"
        "tests/test_a.py:4: AssertionError\n"
        "----------------------------- Captured stdout call -----------------------------\n"
        "== Results ==\nE  not an assertion, printed by the test\n"
        "=========================== short test summary info ============================\n"
        "FAILED mod.py::mod.double\nFAILED tests/test_a.py::test_a - assert 1 == 2\n"
        "============================== 2 failed in 0.03s ===============================\n")
    c = compress("pytest -l", out, "", 1)
    assert "Expected:\n    5\nGot:\n    4\nmod.py:5: DocTestFailure" in c.text
    assert "005     >>> double(2)" in c.text  # pytest's own lines of the report
    assert "total      = 1" not in c.text and _reasons(c.text)["frame variables"] == 2
    # the test's output, even when it looks like a section or an E line, is left as it is
    assert "-- Captured stdout call --\n== Results ==\nE  not an assertion, printed by the test\n" in c.text
    assert "FAILED" not in c.text  # both named by their blocks


# ----------------------------------------------------------------------------- V2: --tb=short frames


def test_short_tracebacks_keep_their_frames() -> None:
    t = _run("pytest_long_ids_tb_short").text
    assert t.count("tests/test_ids.py:6: in test_roundtrip_preserves_every_field") == 7
    assert "assert got == 54, payload" not in t and _reasons(t)["traceback source"] == 7
    t = _run("pytest_tb_short").text
    assert "tests/test_hypo.py:4: in test_add_commutes_badly" in t and "tests/test_hypo.py:6: in test_add_commutes_badly" in t


def test_collection_errors_keep_the_project_frames_the_raising_frame_and_the_error() -> None:
    t = _run("pytest_collect_errors").text
    assert "tests/test_broken_import.py:1: in <module>\nE ModuleNotFoundError: No module named 'nonexistent_module_xyz'" in t
    assert "ImportError while importing test module 'tests/test_broken_import.py'." in t  # pytest's words are not source
    # the frames of installed code (pytest's, importlib's) are announced, but the one that raised
    assert "/root/.pyenv/versions/3.11.7/lib/python3.11/ast.py:50: in parse\nE File \"tests/test_syntax.py\", line 1" in t
    assert "<frozen importlib._bootstrap>" not in t and "_pytest/" not in t and _reasons(t)["library frames"] == 10
    assert "E SyntaxError: invalid syntax" in t and "Interrupted: 2 errors during collection" in t


# ----------------------------------------------------------------------------- V3: --tb=line


def test_line_tracebacks_keep_the_message_lines_and_the_location() -> None:
    t = _run("pytest_long_ids_tb_line").text
    for k in range(7):
        assert f"E AssertionError: customer-record-00{k + 1}-with-a-long-descriptive-identifier\n  assert {55 + k} == 54\n" in t
    # the location line says the message again: it is written with the exception's name only
    assert t.count("\ntests/test_ids.py:6: AssertionError\n") == 7 and "/tmp/auditS/" not in t
    t = _run("pytest_tb_line").text
    assert "E assert (11 + 0) == ((0 + 11) + 1)\n  Failing test case: test_add_commutes_badly(\n      a=11," in t
    assert "\ntests/test_hypo.py:6\n" in t  # "path:6: assert (11 + 0) == ..." repeats the E line
    assert "E RuntimeError: fixture db: cannot open /var/lib/app/data.sqlite (locked)" in t
    assert "  {'k19': 19} != {'k19': -1}" in t


# ----------------------------------------------------------------------------- V4: --tb=native


def test_native_tracebacks_keep_the_project_frames_and_the_whole_exception() -> None:
    c = _run("pytest_tb_native")
    t = c.text
    assert "__ ERROR at setup of test_uses_db __\n  conftest.py:5 in db\nRuntimeError: fixture db: cannot open" in t
    assert "  tests/test_hypo.py:4 in test_add_commutes_badly\n  tests/test_hypo.py:6 in test_add_commutes_badly\n" in t
    assert "AssertionError: assert (11 + 0) == ((0 + 11) + 1)\nFailing test case: test_add_commutes_badly(\n    a=11," in t
    assert "AssertionError: mismatch for alpha-alpha-alpha-alpha-alpha-alpha-alpha-alpha-38\nassert 114 == 115\n" in t
    assert "  Differing items:\n  {'k7': 7} != {'k7': 70}" in t
    assert "site-packages" not in t and "Traceback (most recent call last)" not in t
    reasons = _reasons(t)
    assert reasons["library frames"] > 250 and reasons["traceback source"] > 250
    assert c.sent_tokens < c.raw_tokens / 8


def test_a_native_traceback_raised_in_a_library_keeps_its_last_frame() -> None:
    frames = "".join(f'  File "/venv/lib/python3.11/site-packages/_pytest/m{k}.py", line {k + 1}, in f{k}\n    g{k}()\n'
                     for k in range(6))
    out = ("============================= test session starts ==============================\n"
           "rootdir: /home/dev/proj\ncollected 1 item\n\ntests/test_a.py F  [100%]\n\n"
           "=================================== FAILURES ===================================\n"
           "____________________________________ test_a ____________________________________\n"
           "Traceback (most recent call last):\n" + frames
           + '  File "/home/dev/proj/tests/test_a.py", line 3, in test_a\n    json.loads("{")\n'
           + '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode\n    obj, end = self.scan_once(s, idx)\n'
           "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n"
           "=========================== short test summary info ============================\n"
           "FAILED tests/test_a.py::test_a - json.decoder.JSONDecodeError: Expecting property name enclosed in...\n"
           "============================== 1 failed in 0.01s ===============================\n")
    c = compress("pytest --tb=native", out, "", 1)
    assert "  tests/test_a.py:3 in test_a\n  /usr/lib/python3.11/json/decoder.py:353 in raw_decode\njson.decoder.JSONDecodeError:" in c.text
    assert "tests/test_a.py:3" in c.must_keep and _reasons(c.text)["library frames"] == 6


# ----------------------------------------------------------------------------- V5: warnings


def test_every_located_warning_of_the_summary_survives() -> None:
    c = _run("pytest_many_warnings")
    shown = [ln for ln in c.text.split("\n") if re.fullmatch(r"  tests/test_warn\.py:\d+: \w+Warning: legacy api number \d+ .*", ln)]
    assert len(shown) == 60
    assert "middle of output" not in c.text and "warnings.warn(" not in c.text
    reasons = _reasons(c.text)
    assert reasons["warning source"] == 60 and reasons["warning test ids"] == 60
    assert c.sent_tokens < c.raw_tokens / 2


def test_a_located_python_warning_or_error_is_a_fact_for_any_command() -> None:
    lines = [f"/srv/app/mod{k}.py:{k + 3}: {cat}: legacy api number {k} is going away" for k, cat in
             enumerate(["RuntimeWarning", "DeprecationWarning", "UserWarning", "PendingDeprecationWarning"] * 10)]
    noise = [f"processing record {k} of 4000 with checksum {k * 7919 % 10007}" for k in range(300)]
    out = "\n".join(noise[:150] + lines + noise[150:] + ["app/io.py:9: ValueError: bad header", "done"]) + "\n"
    c = compress("python -m app.run", out, "", 1)
    for line in lines:
        assert line in c.text and line in c.must_keep
    assert "app/io.py:9: ValueError: bad header" in c.must_keep


# ----------------------------------------------------------------------------- through the CLI


def test_the_omitted_frames_of_a_native_traceback_expand_exactly(tmp_path: Path) -> None:
    fx, raw = _case("pytest_tb_native")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_DB": str(tmp_path / "data" / "events.db"),
           "LEAN_CTX_AGENT_ID": "audit", "LEAN_CTX_NO_DAEMON": "1"}
    env.pop("LEAN_CTX_SESSION_ID", None)

    def cli(*args: str) -> dict:
        p = subprocess.run([LEAN_CTX, *args, "--json"], capture_output=True, text=True, env=env, timeout=60, check=False)
        assert p.returncode in (0, 1), p.stderr
        return json.loads(p.stdout)

    out = cli("compress", "--as", fx["command"], str(FIXTURES / "pytest_tb_native.txt"), "--exit-code", "1")
    assert out["archive_id"] and "library frames" in out["text"]
    c = compress(fx["command"], raw, "", 1)
    lines = raw.split("\n")
    (first, last), = [r for o in c.omissions if o.reason == "library frames" for r in o.ranges][:1]
    got = cli("expand", out["archive_id"], "--lines", f"{first}-{last}")["text"].split("\n")
    assert got == [f"{k}:{lines[k - 1]}" for k in range(first, last + 1)]
