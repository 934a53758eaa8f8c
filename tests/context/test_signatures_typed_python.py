"""``signatures`` over typed Python: private functions and overload implementations are written
``name(…)`` (their row, line, decorators and name kept; the footer counts the implementations),
while every public signature, every ``@overload`` row, dunder, private class, constant and type
alias stays whole, and so does a private function whose parameters are as short as ``(…)``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.modes.compact import compact_symbols
from leanctx.context.tokens import count_tokens

TYPED = '''\
from typing import TypeVar, overload

_T = TypeVar("_T")
_LIMIT: int = 5


def _helper(x: int, *, retries: int = 3) -> str:
    return str(x)


@cache
async def _fetch(url: str) -> bytes:
    return b""


def public(a: _T, b: int = _LIMIT) -> _T:
    return a


class Client:
    def __init__(self, base: str) -> None:
        self.base = base

    def __repr__(self) -> str:
        return self.base

    @property
    def _state(self) -> int:
        return 0

    @staticmethod
    def _parse(raw: bytes) -> dict[str, int]:
        return {}

    @overload
    def get(self, key: str) -> str: ...
    @overload
    def get(self, key: str, default: _T) -> str | _T: ...
    def get(self, key: str, default: object = None) -> object:
        return default

    def get_all(self) -> list[str]:
        return []


class _Internal:
    def run(self, n: int) -> None:
        pass
'''


def _rows(src: str) -> list[str]:
    return read("client.py", src, "signatures").text.splitlines()


def test_private_functions_and_overload_implementations_are_named_with_their_row() -> None:
    rows = _rows(TYPED)
    assert rows[:-1] == [
        '3 _T = TypeVar("_T")',  # private type variables and constants stay whole
        "4 _LIMIT: int = 5",
        "7 _helper(…)",
        "11 @cache async _fetch(…)",  # decorators and ``async`` kept
        "16 public(a: _T, b: int=_LIMIT)->_T",
        "20 class Client",
        "21   __init__(base: str)",
        "24   __repr__()->str",  # dunders are the class's interface
        "27   @property _state()->int",  # as short as ``(…)`` is worth: written whole
        "31   @staticmethod _parse(…)",
        "35   @overload get(key: str)->str",  # every overload whole
        "37   @overload get(key: str, default: _T)->str | _T",
        "39   get(…)",  # its implementation
        "42   get_all()->list[str]",
        "46 class _Internal",  # a private class and its public members stay
        "47   run(n: int)->None",
    ]
    assert rows[-1] == ("[signatures · 48 lines · 32 lines not shown · 3 private functions written name(…) · "
                        "1 overload implementation written name(…): see its @overload rows]")


def test_a_function_redefined_after_its_implementation_is_written_whole() -> None:
    src = ("@overload\ndef f(x: int) -> int: ...\n@overload\ndef f(x: str) -> str: ...\n"
           "def f(x):\n    return x\n\n\ndef f(y: bytes) -> bytes:\n    return y\n")
    assert _rows(src)[:-1] == ["1 @overload f(x: int)->int", "3 @overload f(x: str)->str", "5 f(…)",
                               "9 f(y: bytes)->bytes"]
    assert _rows(src)[-1].endswith("· 1 overload implementation written name(…): see its @overload rows]")
    # no overload before it: a function is written whole, however it is decorated
    assert _rows("@typing.no_type_check\ndef g(x: int) -> int:\n    return x\n")[0] == \
        "1 @typing.no_type_check g(x: int)->int"


def test_other_languages_keep_their_unexported_signatures() -> None:
    go = "package p\n\nfunc helper(x int) string {\n\treturn \"\"\n}\n"
    assert read("p.go", go, "signatures").text.splitlines()[0] == "3 helper(x int) string"
    js = "function _local(a, b) { return a }\nexport function run(x) { return x }\n"
    assert read("m.js", js, "signatures").text.splitlines()[:2] == ["1 _local(a, b)", "2 export run(x)"]


def test_real_files_keep_every_public_signature_whole() -> None:
    spec = importlib.util.find_spec("httpx")
    assert spec is not None and spec.origin is not None
    named = sent = written = 0
    for p in sorted(Path(spec.origin).parent.glob("_*.py"))[:10]:
        text = p.read_text()
        syms = compact_symbols(str(p), text, detect_language(str(p), text))
        if not syms:
            continue
        r = read(str(p), text, "signatures")
        rows = r.text.splitlines()[:-1]
        assert len(rows) == len(syms), p
        for s, row in zip(syms, rows, strict=True):
            head = f"{s.line} {'  ' * s.depth}"
            private = s.kind in ("function", "method") and s.name.startswith("_") and not s.name.endswith("__")
            if private and len(s.signature) - s.signature.index(f"{s.name}(") - len(s.name) > 12:
                assert row.startswith(head) and row.endswith(f"{s.name}(…)"), (p, row)
                named += 1
            elif row.endswith("(…)"):  # an overload implementation
                assert "@overload" in rows[rows.index(row) - 1], (p, row)
            else:
                assert row == head + s.signature, (p, row)
        whole = "\n".join(f"{s.line} {'  ' * s.depth}{s.signature}" for s in syms)
        sent += count_tokens("\n".join(rows))
        written += count_tokens(whole)
    assert named > 10 and sent < written


def test_cli_signatures_names_private_functions(tmp_path: Path) -> None:
    (tmp_path / "client.py").write_text(TYPED)
    exe = Path(sys.executable).with_name("lean-ctx")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([str(exe), "read", "--mode", "signatures", "client.py"], check=False, capture_output=True,
                       text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert "1 overload implementation written name(…): see its @overload rows" in out[0]
    assert "7 _helper(…)" in out and "39   get(…)" in out and "16 public(a: _T, b: int=_LIMIT)->_T" in out
