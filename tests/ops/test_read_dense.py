"""Minified and statement-only code: ``auto`` never answers with an empty outline, and a capped
read of one over-long line sends what fits of it (cut by characters) instead of nothing, with
the exact ``expand`` call for the rest; following it goes on where the answer stopped. The
part left in the archive is deferred, not counted as saved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.context.modes import read as render
from leanctx.context.tokens import count_tokens
from leanctx.ops.expand import expand
from leanctx.ops.read import read_files

pytestmark = pytest.mark.timeout(180)


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "data" / "e.db")
    yield app
    app.close()


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


MINIFIED = ";".join(f"var a{i}=function(x){{return x*{i}}}" for i in range(20_000)) + "\n"


def test_auto_sends_minified_code_in_full_not_an_empty_outline() -> None:
    r = render("dist/app.min.js", MINIFIED, "auto")
    assert r.mode == "full"
    assert "minified or generated" in (r.reason or "")


def test_auto_falls_back_to_full_when_the_outline_is_empty() -> None:
    script = "".join(f"console.log({i});\n" for i in range(200))  # not small, no declarations
    r = render("scripts/run.js", script, "auto")
    assert r.mode == "full" and r.text.count("console.log") == 200
    assert "view was empty" in (r.reason or "")
    code = "".join(f"function f{i}(x) {{\n  return x + {i};\n}}\n" for i in range(60))
    assert render("lib/f.js", code, "auto").mode == "signatures"  # an outline with content stays


def test_a_capped_single_line_is_sent_in_part_and_the_rest_follows(lc, project: Path) -> None:  # type: ignore[no-untyped-def]
    (project / "app.min.js").write_text(MINIFIED)
    [a] = read_files(lc, ["app.min.js"], mode="full", actor="a1", session_id="s1", project=str(project))
    assert a.capped and a.sent_tokens <= 20_000 and count_tokens(a.text) == a.sent_tokens
    body = a.text.split("\n")[1]
    assert len(body) > 10_000 and MINIFIED.startswith(body)  # a real prefix of the line, not nothing
    m = re.search(r"lean-ctx expand (\S+) --lines '1\[(\d+)-(\d+)\]'", a.text)
    assert m, a.text[-400:]
    assert int(m.group(2)) == len(body) + 1  # it goes on exactly where the answer stopped
    nxt = expand(lc, m.group(1), lines=f"1[{m.group(2)}-{m.group(3)}]", actor="a1", session_id="s1",
                 project=str(project))
    first = nxt.text.split("\n")[0]
    assert MINIFIED[len(body):].startswith(first[:5000])
    # the rest is deferred, not saved: the event says how much is still in the archive
    from leanctx.events.codec import payload_dict

    [ev] = [e for e in lc.store.read_all(0) if e.kind == "file.read"]
    p = payload_dict(ev.payload)
    assert p["deferred_tokens"] > 200_000 and p["sent_tokens"] == a.sent_tokens
