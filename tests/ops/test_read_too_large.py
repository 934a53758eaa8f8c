"""Answers that used to lead nowhere: a file over the 8 MiB read limit (the read refusal — every
mode but ``lines:``, which streams it — and the search note name the commands that reach it,
and those commands work), and a Go map of a file whose only declaration is private."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.modes.outline import render_map
from leanctx.ops.read import MAX_FILE_BYTES

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
FILLER = "filler line of the big log, nothing to see here\n"
N_FILLER = MAX_FILE_BYTES // len(FILLER) + 10
BAR = "progress 50%\rprogress 100%\n"  # a lone CR: two lines for lean-ctx, one for grep -n alone
KEY_AT = 2 + N_FILLER + 1  # the api_key line as lean-ctx numbers it (grep -n alone: one less)
NEEDLE_AT = KEY_AT + 1
# the grep that the refusal and the search note name for "big log.txt": behind a perl that makes each lone CR a
# line end (lean-ctx numbers lines so, grep -n alone does not), all in single quotes for lean-ctx shell
BIG_GREP = r"""lean-ctx shell -- 'perl -pe "s/\r(?!\n)/\n/g" '"'"'big log.txt'"'"' | grep {flags} {pattern}'"""


def run(db: Path, proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_NO_DAEMON": "1"}
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    with open(root / "big log.txt", "w", newline="") as f:
        f.write(BAR)
        f.write(FILLER * N_FILLER)
        f.write(f'api_key = "{SECRET}"\nthe needle is here\n')
    (root / "small.py").write_text("x = 1\n")
    return root


def _lean_ctx_args(command: str) -> list[str]:
    """The arguments of a ``lean-ctx …`` command an answer names."""
    args = shlex.split(command)
    assert args[0] == "lean-ctx"
    return args[1:]


def test_read_of_a_too_large_file_names_commands_that_work(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    p = run(db, proj, "read", "big log.txt", "--mode", "full")  # every mode but lines: refuses it
    assert p.returncode == 2 and "READ_FILE_TOO_LARGE" in p.stderr
    m = re.search(r"find their numbers with (lean-ctx shell -- '.+?') \(numbered as lean-ctx numbers lines: a lone CR"
                  r" ends one too, which grep -n alone does not count; the shell's output is redacted too\)", p.stderr)
    assert m, p.stderr
    assert m.group(1) == BIG_GREP.format(flags="-n", pattern="PATTERN"), m.group(1)
    assert "sed -n" not in p.stderr
    out = run(db, proj, *_lean_ctx_args(m.group(1).replace("PATTERN", "needle")))
    assert out.returncode == 0 and f"{NEEDLE_AT}:the needle is here" in out.stdout, out.stdout + out.stderr
    # the shell's output is redacted too: the secret's line is found, its key is not shown
    out = run(db, proj, *_lean_ctx_args(m.group(1).replace("PATTERN", "api_key")))
    assert out.returncode == 0 and f'{KEY_AT}:api_key = "[REDACTED:openai_key]"' in out.stdout, out.stdout + out.stderr
    assert SECRET not in out.stdout
    # and a lines: read of the lines it found, which streams just those lines (leanctx.ops.read_huge)
    m = re.search(r"a read in mode (lines:N-M) streams just those lines", p.stderr)
    assert m, p.stderr
    out = run(db, proj, "read", "big log.txt", "--mode", m.group(1).replace("N-M", f"{KEY_AT}-{NEEDLE_AT}"))
    assert out.returncode == 0, out.stderr
    assert f'{KEY_AT}\tapi_key = "[REDACTED:openai_key]"' in out.stdout and f"{NEEDLE_AT}\tthe needle is here" in out.stdout
    assert SECRET not in out.stdout and "filler line" not in out.stdout, out.stdout


@pytest.mark.parametrize("mode", ["map", "aggressive"])
def test_other_modes_still_refuse_a_too_large_file(tmp_path: Path, proj: Path, mode: str) -> None:
    p = run(tmp_path / "e.db", proj, "read", "big log.txt", "--mode", mode)
    assert p.returncode == 2 and "READ_FILE_TOO_LARGE" in p.stderr and "lines:N-M" in p.stderr, p.stderr


@pytest.mark.parametrize("method", ["--regex", "--bm25"])
def test_search_names_the_files_it_skips_and_how_to_search_them(tmp_path: Path, proj: Path, method: str) -> None:
    db = tmp_path / "e.db"
    p = run(db, proj, "search", method, "needle")
    assert p.returncode == 0, p.stderr
    assert "(big log.txt): results are partial" in p.stdout
    m = re.search(r"search it with: (lean-ctx shell -- '.+?') \(numbered as lean-ctx numbers lines: a lone CR ends"
                  r" one too, which grep -n alone does not count\), then read the lines it finds with --mode"
                  r" (lines:N-M) \(streamed\)\]", p.stdout)
    assert m, p.stdout
    assert m.group(1) == BIG_GREP.format(flags="-niE", pattern="needle"), m.group(1)
    out = run(db, proj, *_lean_ctx_args(m.group(1)))
    assert out.returncode == 0 and "the needle is here" in out.stdout, out.stdout + out.stderr
    found = re.search(r"^(\d+):the needle is here$", out.stdout, re.M)
    assert found and int(found[1]) == NEEDLE_AT, out.stdout
    out = run(db, proj, "read", "big log.txt", "--mode", m.group(2).replace("N-M", f"{found[1]}-{found[1]}"))
    assert out.returncode == 0 and f"{found[1]}\tthe needle is here" in out.stdout, out.stdout + out.stderr


def test_search_names_a_few_files_and_counts_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(5):
        with open(root / f"big{i}.txt", "w") as f:
            f.write("x" * 100 + "\n" * 1 + ("y" * 99 + "\n") * (MAX_FILE_BYTES // 100 + 1))
    p = run(tmp_path / "e.db", root, "search", "--regex", "zz")
    assert "5 files over 8,388,608 bytes (the read limit) not searched (big0.txt, big1.txt, big2.txt and 2 more)" \
        in p.stdout, p.stdout
    assert ("""results are partial; search them one at a time, big0.txt first with: lean-ctx shell -- 'perl -pe"""
            r""" "s/\r(?!\n)/\n/g" big0.txt | grep -niE zz' (numbered as lean-ctx numbers lines: a lone CR ends one"""
            " too, which grep -n alone does not count), then read the lines it finds with --mode lines:N-M"
            " (streamed)]") in p.stdout, p.stdout


def test_search_note_never_repeats_a_secret_query(tmp_path: Path, proj: Path) -> None:
    p = run(tmp_path / "e.db", proj, "search", "--regex", SECRET)
    assert SECRET not in p.stdout and BIG_GREP.format(flags="-nE", pattern="PATTERN") in p.stdout, p.stdout


GO_PRIVATE = 'package tzdata\n\n// Code generated. DO NOT EDIT.\n\nconst zipdata = "PK\\x03\\x04"\n'


def test_go_map_counts_the_private_declarations_it_does_not_list() -> None:
    r = render_map("zipdata.go", GO_PRIVATE, "go")
    first, footer = r.text.splitlines()
    assert first == "(no imports or exported declarations; 1 private declaration not listed)"
    assert "0 listed + 1 private declaration not listed" in footer
    two = "package p\nconst (\n\ta, b = 1, 2\n\t_ = 3\n)\nvar (\n\tc int\n)\n"
    assert render_map("p.go", two, "go").text.splitlines()[0] == \
        "(no imports or exported declarations; 3 private declarations not listed)"
    # nothing declared at all: said as before
    assert render_map("e.go", "package p\n", "go").text.splitlines()[0] == "(no imports or declarations found)"
