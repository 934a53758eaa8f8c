"""Dispatch, the generic pass and the accounting builder, on small generated inputs."""

from __future__ import annotations

import pytest

from leanctx.context.shell import compress, fill_archive, parse_command
from leanctx.context.shell.builder import Builder, State
from leanctx.context.shell.patterns import select


@pytest.mark.parametrize(
    ("command", "tool", "sub"),
    [
        ("python -m pytest -x tests", "pytest", ""),
        ("python3.11 -m unittest discover", "unittest", ""),
        (".venv/bin/python -m mypy src", "mypy", ""),
        ("uv run pytest -q", "pytest", ""),
        ("poetry run ruff check .", "ruff", ""),
        ("npx tsc --noEmit", "tsc", ""),
        ("pnpm exec eslint src", "eslint", ""),
        ("FOO=1 BAR=2 cargo test --lib", "cargo", "test"),
        ("env RUST_LOG=debug cargo +nightly build", "cargo", "build"),
        ("cd app && git --no-pager log -n 5 | head -50", "git", "log"),
        ("git -C ../repo -c color.ui=always status", "git", "status"),
        ("sudo docker ps -a", "docker", "ps"),
        ("docker compose logs web", "docker", "logs"),
        ("timeout 30 go test ./...", "go", "test"),
        ("kubectl -n prod get pods", "kubectl", "get"),
        ("npm run build", "npm", "run:build"),
        ("npm t", "npm", "test"),
        ("yarn", "yarn", "install"),
        ("fdfind -e py", "fd", ""),
        ("time make -j4 all", "make", "all"),
    ],
)
def test_parse_command(command: str, tool: str, sub: str) -> None:
    cmd = parse_command(command)
    assert (cmd.tool, cmd.sub) == (tool, sub)


def test_argv_lists_are_accepted() -> None:
    assert parse_command(["git", "status", "--short"]).sub == "status"
    assert select(parse_command("uv pip install x"), [])[0] == "pip"
    assert select(parse_command("some-unknown-tool"), [])[0] == "generic"
    assert select(parse_command("./run.sh"), ["=" * 10 + " test session starts " + "=" * 10])[0] == "pytest"


def test_never_worse_returns_the_raw_output() -> None:
    c = compress("echo hi", "hi\n", "", 0)
    assert c.pattern == "raw" and c.text == "hi" and c.sent_tokens == c.raw_tokens
    assert c.omissions == [] and c.omitted_lines == 0


def test_repeats_are_folded_with_a_count() -> None:
    out = "\n".join(["starting"] + ["retrying connection to db:5432"] * 200 + ["done"]) + "\n"
    c = compress("./worker", out, "", 0)
    assert "retrying connection to db:5432  [×200]" in c.text
    assert c.folded_lines == 199 and c.omitted_lines == 0
    assert c.raw_lines == c.kept_lines + c.folded_lines + c.blank_lines


def test_progress_bars_and_ansi_are_collapsed() -> None:
    lines = [f"\x1b[32mDownloading\x1b[0m {i}% |{'█' * (i // 5)}| eta 0:00:{i:02d}" for i in range(0, 100, 2)]
    out = "\n".join(["fetching model", *lines, "saved to ./m.bin"]) + "\n"
    c = compress("fetch-model", out, "", 0)
    assert "\x1b" not in c.text
    assert "saved to ./m.bin" in c.text and "fetching model" in c.text
    assert "[… 50 lines omitted (progress) · expand {archive}]" in c.text
    assert c.omitted_lines == 50


def test_carriage_return_redraws_keep_the_last_state() -> None:
    c = compress("wget x", "".join(f"\r{i}%" for i in range(101)) + "\rdone\n" + "ok\n" * 30, "", 0)
    assert c.text.startswith("done")


def test_long_middle_is_elided_but_errors_survive() -> None:
    body = [f"processing item {i}: key={i * 7919 % 1000} value={i * 31}" for i in range(400)]
    body[213] = "ERROR: failed to parse config at settings/app.yaml:42: unexpected key"
    c = compress("./batch", "\n".join(body) + "\n", "", 3)
    assert "settings/app.yaml:42" in c.text
    assert "[exit 3]" in c.text
    assert "lines omitted" in c.text
    assert c.sent_tokens < c.raw_tokens / 3
    assert sum(o.count for o in c.omissions) == c.omitted_lines


def test_fill_archive_only_touches_markers() -> None:
    body = [f"line {i} {'x' * (i % 13)} {i * 17 % 101}" for i in range(300)]
    body[0] = "user text mentioning {archive} literally"
    c = compress("./gen", "\n".join(body) + "\n", "", 0)
    filled = fill_archive(c.text, "A7")
    assert "{archive} literally" in filled
    assert "· expand A7]" in filled


def test_builder_never_omits_a_must_keep_line() -> None:
    b = Builder(["a", "b", "FATAL x", "c", "d"])
    b.must_keep(2)
    assert b.omit(range(5), "noise") == 4
    assert b.state[2] == State.KEPT
    text = b.render(0)
    assert "FATAL x" in text
    assert text.count("omitted") == 2  # the kept line splits the run into two markers
    counts = b.counts()
    assert counts[State.OMITTED] == 4 and counts[State.KEPT] == 1


def test_builder_footer_states_totals() -> None:
    b = Builder([f"l{i}" for i in range(6)])
    b.omit([0, 1], "hints", inline=False)
    b.omit([4], "noise", inline=False)
    b.keep_all(range(6))
    text = b.render(1)
    assert "[… 3 lines omitted: 2 hints, 1 noise · expand {archive}]" in text
    assert text.endswith("[exit 1]")
    assert sorted(o.reason for o in b.omissions()) == ["hints", "noise"]


def test_fact_scan_over_the_whole_text_matches_the_per_line_regexes() -> None:
    from leanctx.context.shell.generic import FACT_RE, SUMMARY_RE, WARN_RE, _hit_lines

    lines = [
        "ok  \texample.com/geo\t0.01s", "OK", "FAILED (failures=1)", "  ValueError: bad", "İstanbul error here",
        "Warning: deprecated", "[warn] x", "WARN y", "plain line", "", "Ran 3 tests in 0.1s", "3 passed in 0.2s",
        "could not open", "build finished", "done in 3s", "segmentation fault", "KeyboardInterrupt", "tokens: ok",
        "error[E0308]: mismatched", "ẞ ſ Ǆ mixed case ERROR", "found 3 issues", "test result: ok",
    ] * 3
    for warnings in (True, False):
        want = [i for i, ln in enumerate(lines)
                if FACT_RE.search(ln) or SUMMARY_RE.search(ln) or (warnings and WARN_RE.search(ln))]
        assert _hit_lines(lines, warnings) == want
    assert _hit_lines([], True) == []


# ----------------------------------------------------------------------------- markers


def test_settle_keeps_lines_that_cost_less_than_their_marker() -> None:
    from leanctx.context.tokens import count_tokens

    b = Builder(["--", "kept line", *(f"progress {i} " + "x" * 60 for i in range(8))])
    b.omit([0], "config echo", inline=False)  # 1 token; ", 1 config echo" in the marker costs more
    b.omit(range(2, 10), "progress", inline=False)
    b.keep(1)
    b.settle(count_tokens)
    text = b.render(0)
    assert text.startswith("--\nkept line")
    assert "config echo" not in text
    assert text.endswith("[… 8 lines omitted (progress) · expand {archive}]")  # one reason: no count twice
    assert [(o.reason, o.count) for o in b.omissions()] == [("progress", 8)]
    assert b.counts()[State.KEPT] == 2 and b.counts()[State.OMITTED] == 8
    # a line alone in the footer is weighed against the whole marker, archive id included
    b = Builder(["Looking in links: /opt/wheels", "Requirement already satisfied: x"])
    b.omit([0], "config echo", inline=False)
    b.keep(1)
    b.settle(count_tokens)
    assert b.render(0) == "Looking in links: /opt/wheels\nRequirement already satisfied: x" and b.omissions() == []


def test_settle_withdraws_an_inline_marker_longer_than_its_lines() -> None:
    from leanctx.context.tokens import count_tokens

    b = Builder(["head", "x", "tail"])
    b.keep(0)
    b.omit([1], "noise")
    b.keep(2)
    b.settle(count_tokens)
    assert b.render(0) == "head\nx\ntail" and b.omissions() == []


def test_the_same_line_with_later_timestamps_is_shown_once() -> None:
    err = 'E1130 15:32:{s:02d}.{us:06d}   12408 memcache.go:265] "Unhandled Error" err="dial tcp 127.0.0.1:8080: connect: connection refused"'
    lines = [err.format(s=i, us=i * 1371) for i in range(6)] + ["The connection to the server localhost:8080 was refused"]
    c = compress("some-client get pods", "", "\n".join(lines) + "\n", 1)
    assert c.text.startswith(lines[0])
    assert "[… 5 lines omitted (same line, later timestamps) · expand {archive}]" in c.text
    assert lines[-1] in c.text and c.omitted_lines == 5
    # lines that differ in more than their timestamp are not taken for repeats
    other = [f"2026-11-30T15:32:0{i}Z job {i} finished with status {i * 7}" for i in range(3)]
    assert all(x in compress("./jobs", "\n".join(other) + "\n", "", 0).text for x in other)


def test_footer_reasons_never_contain_a_closing_parenthesis() -> None:
    # the single-reason footer is "(reason)": a ")" inside would end it early
    import pathlib
    import re

    src = pathlib.Path(__file__).resolve().parents[2] / "leanctx" / "context" / "shell"
    for path in src.rglob("*.py"):
        for reason in re.findall(r'\bomit\([^"\n]*"([^"{]*)"', path.read_text()):
            assert ")" not in reason, (path.name, reason)


# ----------------------------------------------------------------------------- git


def test_git_diff_header_lines_are_stated_by_the_compact_header() -> None:
    out = "".join(f"{x}\n" for x in [
        "diff --git a/shop/tax.py b/shop/tax.py", "new file mode 100644", "index 0000000..e9614d7",
        "--- /dev/null", "+++ b/shop/tax.py", "@@ -0,0 +1 @@", "+RATES = {'de': 19}",
        "diff --git a/old.py b/new.py", "similarity index 91%", "rename from old.py", "rename to new.py",
        "index 1111111..2222222 100755", "--- a/old.py", "+++ b/new.py", "@@ -3 +3 @@", "-x = 1", "+x = 2",
    ])
    c = compress("git diff", out, "", 0)
    assert "--- shop/tax.py (new)" in c.text
    assert "--- new.py (similarity 91%, renamed from old.py)" in c.text
    assert "+++" not in c.text and "/dev/null" not in c.text and "rename to" not in c.text
    assert "+RATES = {'de': 19}" in c.text and "-x = 1\n+x = 2" in c.text
    assert c.omitted_lines + c.kept_lines + c.blank_lines == c.raw_lines
    # the blob ids are stated nowhere else: omitted with a marker, or kept when that is cheaper
    assert ("index 0000000..e9614d7" in c.text) or c.omitted_lines == 2


def test_git_branch_verbose_groups_branches_at_one_commit() -> None:
    out = "".join(f"{x}\n" for x in [
        "  feature/login                3c179fe [origin/feature/login] Handle empty carts",
        "* main                         3c179fe [origin/main: ahead 1] Handle empty carts",
        "  old                          1a2b3c4 Initial commit",
        "  remotes/origin/HEAD          -> origin/main",
    ])
    c = compress("git branch -vv", out, "", 0)
    assert "3c179fe Handle empty carts: feature/login [origin/feature/login], * main [origin/main: ahead 1]" in c.text
    assert c.text.count("Handle empty carts") == 1
    assert "old 1a2b3c4 Initial commit" in c.text and "remotes/origin/HEAD  -> origin/main" in c.text
    assert "* main" in c.must_keep


def test_git_pull_marks_created_paths_in_the_stat_list() -> None:
    out = "".join(f"{x}\n" for x in [
        "Updating 3c179fe..b4b263b", "Fast-forward", " shop/a.py   | 2 ++", " shop/b.py   | 5 +++--",
        " 2 files changed, 5 insertions(+), 2 deletions(-)", " create mode 100644 shop/a.py",
        " delete mode 100644 gone.txt",
    ])
    c = compress("git pull", out, "", 0)
    assert "changed: shop/a.py 2+ (new), shop/b.py 5+-" in c.text
    assert "deleted: gone.txt" in c.text  # not in the stat list: listed on its own
    assert c.text.count("shop/a.py") == 1


def test_git_status_advice_lines_carry_no_information() -> None:
    out = "".join(f"{x}\n" for x in [
        "On branch main", "Your branch is ahead of 'origin/main' by 2 commits.",
        '  (use "git push" to publish your local commits)', "",
        "Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)',
        '  (use "git restore <file>..." to discard changes in working directory)', "\tmodified:   app.py", "",
        'no changes added to commit (use "git add" and/or "git commit -a")',
    ])
    c = compress("git status", out, "", 0)
    assert c.text.startswith("branch main, ahead of 'origin/main' by 2 commits\nunstaged (1): M app.py")
    assert '(use "git push"' not in c.text and '(use "git add <file>' not in c.text
    assert c.blank_lines == 5  # two empty lines and three fixed advice lines
    # a sentence about the state (nothing staged) is not fixed text: kept, or omitted and announced
    assert "no changes added to commit" in c.text or c.omitted_lines == 1


# ----------------------------------------------------------------------------- test runners


_PYTEST_OUT = """\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
rootdir: /home/dev/proj
collected 3 items

tests/test_m.py F..                                                      [100%]

=================================== FAILURES ===================================
_________________________________ test_rounded _________________________________

    def test_rounded():
>       assert Money.of("2.665").rounded().amount == Decimal("2.67")
E       AssertionError: assert Decimal('2.66') == Decimal('2.67')
E        +  where Decimal('2.66') = Money(amount=Decimal('2.66')).amount
E        +    where Money(amount=Decimal('2.66')) = rounded()
E        +      where rounded = Money(amount=Decimal('2.665')).rounded
E        +  and   Decimal('2.67') = Decimal('2.67')

tests/test_m.py:9: AssertionError
=============================== warnings summary ===============================
tests/test_m.py::test_old
  /home/dev/proj/tests/test_m.py:33: DeprecationWarning: to_float loses precision

-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
=========================== short test summary info ============================
FAILED tests/test_m.py::test_rounded - AssertionError: assert Decimal('2.66') == Decimal('2.67')
=================== 1 failed, 2 passed, 1 warning in 0.05s ====================
"""


def test_pytest_failure_blocks_are_dense() -> None:
    c = compress("pytest", _PYTEST_OUT, "", 1)
    t = c.text
    assert '> assert Money.of("2.665").rounded().amount == Decimal("2.67")' in t  # indentation dropped
    assert "E AssertionError: assert Decimal('2.66') == Decimal('2.67')" in t
    # first-level "where"/"and" lines say what was compared; deeper ones how it was computed
    assert "E  +  where Decimal('2.66') = Money(amount=Decimal('2.66')).amount" in t
    assert "E  +  and   Decimal('2.67') = Decimal('2.67')" in t
    assert "= rounded()" not in t and "2 nested where lines" in t
    assert "tests/test_m.py:33: DeprecationWarning" in t and "/home/dev/proj/" not in t  # relative to rootdir
    assert "collected 3 items" not in t  # the final summary counts every test
    assert "-- Docs:" not in t and "1 failed, 2 passed, 1 warning in 0.05s" in t
    assert sum(o.count for o in c.omissions) == c.omitted_lines


def test_pytest_keeps_the_collected_line_without_a_final_summary() -> None:
    out = "\n".join(_PYTEST_OUT.splitlines()[:6]) + "\n"  # interrupted before the end
    assert "collected 3 items" in compress("pytest", out, "", 2).text


def test_unittest_blocks_name_the_test_once_and_share_the_path_prefix() -> None:
    err = """\
.E
======================================================================
ERROR: test_remove (test_inv.InvTest.test_remove)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/home/dev/proj/tests/test_inv.py", line 29, in test_remove
    self.inv.remove("pear", 1)
  File "/home/dev/proj/inv/store.py", line 12, in remove
    self.items[name] -= qty
  File "/home/dev/proj/inv/items.py", line 3, in __getitem__
    raise KeyError(k)
KeyError: 'pear'

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (errors=1)
"""
    c = compress("python -m unittest", "", err, 1)
    assert "ERROR: test_inv.InvTest.test_remove\n" in c.text + "\n"
    assert "[…/ = /home/dev/proj/]" in c.text
    assert "  …/tests/test_inv.py:29 in test_remove" in c.text and "  …/inv/items.py:3 in __getitem__" in c.text
    assert "Traceback (most recent call last)" not in c.text and "KeyError: 'pear'" in c.text
    assert all(f in c.text for f in c.must_keep if not f.startswith("exit "))


def test_tap_summary_and_expected_actual_shown_by_the_diff() -> None:
    out = """\
TAP version 13
# Subtest: formats price
not ok 1 - formats price
  ---
  duration_ms: 1.25
  location: '/home/dev/app/test/price.test.js:8:1'
  failureType: 'testCodeFailure'
  error: |-
    Expected values to be strictly equal:
    + actual - expected

    + '12.50'
    - '12.5'
  expected: '12.5'
  actual: '12.50'
  operator: 'strictEqual'
  stack: |-
    TestContext.<anonymous> (/home/dev/app/test/price.test.js:9:10)
    Test.runInAsyncScope (node:async_hooks:206:9)
  ...
# Subtest: checks truth
not ok 2 - checks truth
  ---
  location: '/home/dev/app/test/price.test.js:12:1'
  error: 'The expression evaluated to a falsy value'
  expected: true
  actual: false
  operator: '=='
  ...
1..2
# tests 2
# pass 0
# fail 2
# cancelled 0
# duration_ms 10.5
"""
    c = compress("node --test", out, "", 1)
    assert "# tests 2 | # pass 0 | # fail 2 | others 0" in c.text and "duration_ms" not in c.text
    assert "[…/ = /home/dev/app/test/]" in c.text and "location: '…/price.test.js:8:1'" in c.text
    assert "(…/price.test.js:9:10)" in c.text
    first, second = c.text.split("not ok 2")
    assert "expected: '12.5'" not in first  # the diff above shows both values
    assert "expected: true" in second and "actual: false" in second  # no diff: the fields are the message


def test_tsc_pretty_count_table_is_dropped_only_when_it_matches_the_list() -> None:
    lines = []
    for path, row, code in [("src/a.ts", 1, 1), ("src/a.ts", 2, 2), ("src/b.ts", 3, 3)]:
        lines += [f"{path}:{row}:1 - error TS{code}: Type 'string' is not assignable to type 'number'.", "",
                  f"{row}   const count: number = 'three';", "    ~~~~~", ""]
    lines += ["", "Found 3 errors in 2 files.", "", "Errors  Files", "     2  src/a.ts:1", "     1  src/b.ts:3"]
    c = compress("tsc --pretty", "\n".join(lines) + "\n", "", 2)
    assert c.pattern == "tsc" and "Errors  Files" not in c.text and "3 per-file count table" in c.text
    lines[-1] = "     4  src/b.ts:3"  # a table that says more than the list: kept
    assert "4  src/b.ts:3" in compress("tsc --pretty", "\n".join(lines) + "\n", "", 2).text


def test_rustc_header_location_and_lint_become_one_line() -> None:
    err = """\
warning: length comparison to zero
 --> src/lib.rs:2:8
  |
2 |     if v.len() == 0 {
  |        ^^^^^^^^^^^^ help: using `is_empty` is clearer: `v.is_empty()`
  |
  = help: for further information visit https://rust-lang.github.io/rust-clippy/index.html#len_zero
  = note: `#[warn(clippy::len_zero)]` on by default

warning: `x` (lib) generated 1 warning
"""
    c = compress("cargo clippy", "", err, 0)
    assert c.text.startswith("src/lib.rs:2:8: warning: length comparison to zero [len_zero]\n")
    assert "    ↳ help: using `is_empty` is clearer: `v.is_empty()`" in c.text
    assert "-->" not in c.text and "lint:" not in c.text


def test_rustc_labels_are_gutter_lines_not_numbered_source() -> None:
    err = "warning: unneeded `return`\n --> src/lib.rs:6:5\n  |\nhelp: remove `return`\n  |\n6 -     return x.iter().map(|i| i * 2).len() > 0;\n6 +     x.iter().map(|i| i * 2).len() > 0\n  |\n"
    c = compress("cargo build", "", err, 0)
    assert "↳" not in c.text and "return x.iter()" not in c.text  # the suggestion is a code frame


def test_go_bare_status_lines_are_stated_by_the_package_lines() -> None:
    out = "--- FAIL: TestMid (0.00s)\n    geo_test.go:14: Mid.Y = 0.6, want 1\nFAIL\nFAIL\texample.com/geo\t0.009s\nFAIL\n"
    c = compress("go test ./...", out, "", 1)
    assert c.text.splitlines()[:3] == ["--- FAIL: TestMid (0.00s)", "geo_test.go:14: Mid.Y = 0.6, want 1",
                                       "FAIL\texample.com/geo\t0.009s"]
    assert c.kept_lines == 5 and c.omitted_lines == 0  # the bare FAIL lines are represented, not dropped


def test_grep_caps_are_announced_in_one_marker() -> None:
    out = "".join(f"src/m{f}.py:{k}:    def f{k}(self):\n" for f in range(4) for k in range(1, 9))
    c = compress("grep -rn def src", out, "", 0)
    assert c.text.count("{archive}") == 1 and "m0.py (5 of 8)" in c.text
    assert "[… 12 lines omitted (more matches) · expand {archive}]" in c.text


def test_docker_legacy_builder_notice_and_logrus_times() -> None:
    err = """\
DEPRECATED: The legacy builder is deprecated and will be removed in a future release.
            Install the buildx component to build images with BuildKit:
            https://docs.docker.com/go/buildx/

time="2026-11-30T15:32:24Z" level=error msg="Can't add file Dockerfile to tar: io: read/write on closed pipe"
Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?
"""
    c = compress("docker build .", "", err, 1)
    assert c.text == ('level=error msg="Can\'t add file Dockerfile to tar: io: read/write on closed pipe"\n'
                      "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon "
                      "running?\n[exit 1]")
    assert c.blank_lines == 4 and c.omitted_lines == 0


def test_pip_collecting_lines_are_dropped_only_when_the_install_names_them() -> None:
    ok = "Collecting requests\n  Downloading requests-2.34.2-py3-none-any.whl (73 kB)\nCollecting idna<4,>=2.5 (from requests)\n" \
         "Installing collected packages: idna, requests\nSuccessfully installed idna-3.20 requests-2.34.2\n"
    c = compress("pip install requests", ok, "", 0)
    assert "Collecting requests" not in c.text and "collected:" not in c.text
    assert "Successfully installed idna-3.20" in c.text and "2 Collecting lines" in c.text
    failed = "Collecting requests\nCollecting idna<4,>=2.5 (from requests)\nERROR: No matching distribution found for idna\n"
    c = compress("pip install requests", failed, "", 1)
    assert "collected: requests, idna<4,>=2.5" in c.text and "ERROR: No matching distribution found for idna" in c.text


def test_a_python_crash_under_any_command_gets_its_traceback_compressed() -> None:
    frames = "".join(f'  File "/srv/app/pkg/mod{k}.py", line {10 + k}, in step{k}\n    result = step{k + 1}(payload, retries=3)\n'
                     for k in range(6))
    err = f"starting worker\nTraceback (most recent call last):\n{frames}ValueError: bad payload: 'x'\n"
    c = compress("python -m worker.main --once", "", err, 1)
    assert c.pattern == "traceback"
    assert "[…/ = /srv/app/pkg/]" in c.text and "  …/mod5.py:15 in step5" in c.text
    assert "ValueError: bad payload: 'x'" in c.text and "starting worker" in c.text
    assert "result = step" not in c.text and "[… 6 lines omitted (traceback source) · expand {archive}]" in c.text


def test_pnpm_install_keeps_what_it_added_and_drops_the_store_location() -> None:
    deps = "".join(f"+ pkg-{k} 1.{k}.0\n" for k in range(5))
    out = ("Progress: resolved 0, reused 0, downloaded 1, added 0\n"
           "Packages are hard linked from the content-addressable store to the virtual store.\n"
           "  Content-addressable store is at: /home/dev/.local/share/pnpm/store/v10\n"
           "  Virtual store is at:             node_modules/.pnpm\n"
           "Packages: +7\n+++++++\n"
           "Progress: resolved 7, reused 0, downloaded 7, added 7, done\n\n"
           f"dependencies:\n{deps}\nDone in 812ms using pnpm v10.4.1\n")
    c = compress("pnpm install", out, "", 0)
    assert c.pattern == "npm"
    assert "Packages: +7" in c.text and "+ pkg-4 1.4.0" in c.text and "dependencies:" in c.text
    assert {"Packages: +7", "+ pkg-0 1.0.0", "+ pkg-4 1.4.0"} <= set(c.must_keep)
    for gone in ("store is at", "hard linked", "+++++++", "Progress:", "Done in"):
        assert gone not in c.text
    assert "[… 7 lines omitted (install log) · expand {archive}]" in c.text
    again = compress("pnpm install", "Already up to date\nDone in 2ms using pnpm v10.4.1\n", "", 0)
    assert "Already up to date" in again.text  # the result of a repeat install, never noise


def test_yarn_add_keeps_the_direct_list_and_omits_the_all_list() -> None:
    direct = ["left-pad@1.3.0", "chalk@4.1.2"]
    every = ["ansi-styles@4.3.0", "chalk@4.1.2", "color-convert@2.0.1", "color-name@1.1.4", "has-flag@4.0.0",
             "left-pad@1.3.0", "supports-color@7.2.0"]
    tree = lambda names: "".join(f"{'└' if k == len(names) - 1 else '├'}─ {n}\n" for k, n in enumerate(names))
    out = ("yarn add v1.22.22\n[1/4] Resolving packages...\n[2/4] Fetching packages...\n"
           "success Saved lockfile.\nsuccess Saved 7 new dependencies.\n"
           f"info Direct dependencies\n{tree(direct)}info All dependencies\n{tree(every)}Done in 1.52s.\n")
    c = compress("yarn add left-pad chalk", out, "", 0)
    assert "success Saved 7 new dependencies." in c.text and "├─ left-pad@1.3.0" in c.text and "└─ chalk@4.1.2" in c.text
    assert {"left-pad@1.3.0", "chalk@4.1.2"} <= set(c.must_keep)
    assert "info All dependencies" not in c.text and "color-convert" not in c.text
    assert "8 all-dependencies list" in c.text and "yarn add v1" not in c.text and "Done in" not in c.text
    # with no direct list (nothing says what was asked for), the one list stays
    only_all = out.replace(f"info Direct dependencies\n{tree(direct)}", "")
    assert "├─ color-convert@2.0.1" in compress("yarn add left-pad chalk", only_all, "", 0).text


def test_script_echo_of_yarn_and_pnpm_selects_the_inner_tool_and_advice_is_dropped() -> None:
    rows = "".join(f"  {k}:7  error  'unused{k}' is assigned a value but never used  no-unused-vars\n"
                   for k in range(1, 9))
    out = (f"yarn run v1.22.22\n$ eslint src\n\n/home/dev/app/src/a.js\n{rows}\n"
           "✖ 8 problems (8 errors, 0 warnings)\n\n"
           "info Visit https://yarnpkg.com/en/docs/cli/run for documentation about this command.\n")
    c = compress("yarn lint", out, "error Command failed with exit code 1.\n", 1)
    assert "$ eslint src" in c.text
    assert "  3:7 error 'unused3' is assigned a value but never used [no-unused-vars]" in c.text  # eslint's rewrite
    assert "info Visit" not in c.text and "yarnpkg.com" not in c.text  # fixed advice: no marker either
    assert "error Command failed with exit code 1." in c.text and "[exit 1]" in c.text


def test_node_uncaught_error_keeps_the_throw_and_project_frames_only() -> None:
    internal = "".join(f"    at Module.{fn} (node:internal/modules/cjs/loader:{1200 + k}:14)\n"
                       for k, fn in enumerate(["_compile", "load", "_load", "require"]))
    err = ("$ node scripts/migrate.js\n/home/dev/app/scripts/migrate.js:12\n"
           "    throw new Error(`unknown column: ${name}`);\n    ^\n\n"
           "Error: unknown column: created_at\n"
           "    at columnFor (/home/dev/app/scripts/migrate.js:12:11)\n"
           "    at Array.map (<anonymous>)\n"
           "    at Object.<anonymous> (/home/dev/app/scripts/migrate.js:20:3)\n"
           "    at parse (/home/dev/app/node_modules/sql-parse/index.js:88:5)\n"
           f"{internal}    at node:internal/main/run_main_module:28:49\n\nNode.js v20.11.0\n"
           " ELIFECYCLE  Command failed with exit code 1.\n")
    c = compress("pnpm run migrate", "", err, 1)
    assert c.pattern == "npm"
    for kept in ("/home/dev/app/scripts/migrate.js:12\n", "throw new Error(`unknown column: ${name}`);",
                 "Error: unknown column: created_at", "(/home/dev/app/scripts/migrate.js:12:11)",
                 "(/home/dev/app/scripts/migrate.js:20:3)", "Command failed with exit code 1."):
        assert kept in c.text
    assert "node:internal" not in c.text and "sql-parse" not in c.text and "Node.js v20" not in c.text
    assert "6 node internal stack frames" in c.text and "2 caret, node version" in c.text


def test_tap_expected_actual_are_repeats_only_when_the_message_compares_them() -> None:
    def block(error: str) -> str:
        return ("TAP version 13\nnot ok 1 - formats one hour\n  ---\n  duration_ms: 1.2\n"
                "  location: '/home/dev/app/test/d.test.js:9:1'\n"
                f"  error: |-\n{error}  expected: '60m'\n  actual: '1h'\n  operator: 'strictEqual'\n  ...\n"
                "1..1\n# tests 1\n# pass 0\n# fail 1\n")
    compared = compress("node --test", block("    Expected values to be strictly equal:\n\n    '1h' !== '60m'\n\n"), "", 1)
    assert "'1h' !== '60m'" in compared.text and "expected: '60m'" not in compared.text
    assert "3 expected/actual repeats" in compared.text
    # the same values named in a message that does not compare them: the fields say what was compared
    prose = compress("node --test", block("    got '1h' where the docs promise '60m'\n"), "", 1)
    assert "expected: '60m'" in prose.text and "actual: '1h'" in prose.text


# ----------------------------------------------------------------------------- edge cases


def test_a_tap_block_cut_short_does_not_swallow_the_next_test() -> None:
    # a passing test's YAML block without its closing "..." (output truncated or interleaved)
    out = ("TAP version 13\nok 1 - adds\n  ---\n  duration_ms: 0.5\nnot ok 2 - subtracts\n  ---\n  duration_ms: 0.7\n"
           "  location: '/p/t.js:3:1'\n  error: 'boom'\n  ...\n# tests 2\n# pass 1\n# fail 1\n")
    c = compress("node --test", out, "", 1)
    assert "not ok 2 - subtracts" in c.text and "location: '/p/t.js:3:1'" in c.text
    assert "subtracts" in c.must_keep and c.omitted_lines == 7  # "ok 1" + its block, "---"/"..." of both


def test_a_traceback_header_is_dropped_only_before_its_frames() -> None:
    # a doctest in a file: the header is followed by "...", not by frames that say it again
    doc = "Usage:\n\n>>> ratio(1, 0)\nTraceback (most recent call last):\n    ...\nZeroDivisionError: division by zero\n"
    manual = "".join(f"line {i} of the manual, with words {i * 7}\n" for i in range(200))
    c = compress("cat README.md", doc + manual, "", 0)
    assert c.pattern == "traceback" and "\nTraceback (most recent call last):\n" in c.text
    assert c.blank_lines == 1  # the empty line only
    crash = 'Traceback (most recent call last):\n  File "w.py", line 3, in <module>\n    main()\nValueError: x\n'
    c = compress("python w.py", "", crash * 4, 1)
    assert "Traceback" not in c.text and c.text.count("w.py:3 in <module>") == 4


def test_pytest_warning_locations_are_all_kept_relative_to_rootdir() -> None:
    head = ("============================= test session starts ==============================\n"
            "rootdir: /home/dev/proj\ncollected 3 items\n\ntests/test_m.py ...  [100%]\n\n"
            "=============================== warnings summary ===============================\n")
    warns = "".join(f"tests/test_m.py::test_{i}\n  /home/dev/proj/src/m.py:{i}: DeprecationWarning: old api\n"
                    f"    warnings.warn('old')\n\n" for i in range(300))
    out = head + warns + "============ 3 passed, 300 warnings in 0.05s ============\n"
    c = compress("pytest", out, "", 0)
    # each location is a fact of its own; the tests that warned and the line of code are announced
    assert all(f"\n  src/m.py:{i}: DeprecationWarning: old api\n" in c.text for i in range(300))
    assert "/home/dev/proj/" not in c.text and "middle of output" not in c.text
    assert "300 warning source, 300 warning test ids" in c.text and c.sent_tokens < c.raw_tokens / 2
    # only a path that starts at the rootdir is rewritten, and "rootdir: /" rewrites none
    other = head + "  /mnt/home/dev/proj/src/m.py:1: DeprecationWarning: x\n============ 3 passed in 0.05s ============\n"
    assert "/mnt/home/dev/proj/src/m.py:1" in compress("pytest", other, "", 0).text
    at_root = other.replace("rootdir: /home/dev/proj", "rootdir: /")
    assert "/mnt/home/dev/proj/src/m.py:1" in compress("pytest", at_root, "", 0).text


def test_git_pull_states_a_mode_other_than_a_plain_files() -> None:
    out = "".join(f"{x}\n" for x in [
        "Updating 3c179fe..b4b263b", "Fast-forward", " run.sh | 5 +++++", " shop/a.py | 2 ++",
        " 2 files changed, 7 insertions(+)", " create mode 100755 run.sh", " create mode 100644 shop/a.py",
        " create mode 120000 latest",
    ])
    c = compress("git pull", out, "", 0)
    assert "changed: run.sh 5+ (new mode 100755), shop/a.py 2+ (new)" in c.text
    assert "created: latest (mode 120000)" in c.text


def test_compression_time_is_linear_in_the_number_of_facts() -> None:
    """Every must-keep fact is checked against the text: per fact in the piece that shows it,
    not in the whole text (facts × text: ~40 s for these outputs before)."""
    import time

    n = 40_000
    status = "On branch main\nChanges not staged for commit:\n" + "".join(f"\tmodified:   src/f{i}.py\n" for i in range(n))
    crash = "".join(f'Traceback (most recent call last):\n  File "/srv/app/pkg/m{i}.py", line {i}, in f\n'
                    f"    x = y\nValueError: bad {i}\n" for i in range(n // 4))
    lint = "".join(f"warning: unused variable `x{i}`\n --> src/lib.rs:{i}:9\n  |\n{i} |     let x{i} = 1;\n"
                   f"  |         ^^ help: prefix\n  |\n\n" for i in range(n // 7))
    for cmd, out in (("git status", status), ("python w.py", crash), ("cargo build", lint)):
        t = time.process_time()  # CPU: a loaded machine stretches wall time
        c = compress(cmd, out, "", 1)
        assert time.process_time() - t < 8, cmd  # ~0.5 s here
        assert not any(line.startswith("[kept]") for line in c.text.splitlines())
