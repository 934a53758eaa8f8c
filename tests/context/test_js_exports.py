"""Module-level constants and exports: JS/TS ``export const``, export lists and CommonJS, Go
``const``/``var`` blocks, Rust ``const``/``static``, in ``map`` and ``signatures`` (the rule:
``leanctx.context.symbols.bindings``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.modes.compact import MAX_STRING, compact_symbols
from leanctx.context.symbols import extract_symbols

ES_MODULE = """\
import { x } from "./x";
export const K = 1;
export const CONFIG = {
  retries: 3,
  onError: () => null,
};
export let counter;
export const f = (a: number): string => "x";
const double = (x) => x * 2;
const MAX_SIZE = 100;
const small = 3;
const { a, b } = x;
const handlers = { go: () => 1 };
function helper(x: number) { return x; }
function pub(y) { return y; }
export { helper as h };
export default pub;
export const URL_PATTERN: RegExp = /^https?:\\/\\/[a-z]+\\.example\\.com\\/path$/;
export declare const version: string;
"""


def _rows(path: str, src: str, mode: str) -> list[str]:
    return read(path, src, mode).text.splitlines()[:-1]


def test_exported_constants_are_listed_in_signatures() -> None:
    assert _rows("m.ts", ES_MODULE, "signatures") == [
        "2 export const K = 1",
        "3 export const CONFIG = …",  # a value spanning lines is elided, as a Python constant's
        "7 export let counter",
        "8 export const f = (a: number): string",  # a function: parameters and return type
        "9 const double = (x)",  # a function, exported or not (as before)
        "10 const MAX_SIZE = 100",  # UPPER_CASE: a constant, exported or not
        "14 helper(x: number)",
        "15 pub(y)",
        "18 export const URL_PATTERN: RegExp = …",  # longer than MAX_STRING: elided, type kept
        "19 export declare const version: string",
    ]


def test_exported_constants_and_export_lists_in_map() -> None:
    rows = _rows("m.ts", ES_MODULE, "map")
    assert rows == [
        "deps: ./x",
        "2 const K CONFIG:3 counter:7",  # consecutive exported constants share a row
        "8 fn f",
        "14 fn helper",  # export { helper as h }
        "15 fn pub",  # export default pub
        "18 const URL_PATTERN version:19",
        "private: double:9 MAX_SIZE:10",
    ]
    kinds = {s.name: (s.kind, s.exported) for s in extract_symbols("m.ts", ES_MODULE)}
    assert kinds["K"] == kinds["CONFIG"] == kinds["counter"] == ("constant", True)
    assert kinds["MAX_SIZE"] == ("constant", False) and kinds["f"] == ("function", True)
    # lowercase local bindings, destructuring and an object holding functions declare nothing
    assert not {"small", "a", "b", "handlers", "x"} & set(kinds)


def test_names_exported_by_a_list_are_exported_whatever_their_kind() -> None:
    src = ("interface Props { a: string }\nconst config = { a: 1 };\nclass Store {}\nfunction hidden() {}\n"
           "export type { Props };\nexport { config, Store as S };\nexport * from './other';\n"
           "export { hidden } from './elsewhere';\n")
    syms = {s.name: s for s in extract_symbols("m.ts", src)}
    assert syms["Props"].exported and syms["Store"].exported
    assert syms["config"].kind == "constant" and syms["config"].exported  # listed because exported
    assert not syms["hidden"].exported  # a re-export of another module's name, not this one
    assert "private: hidden:4" in read("m.ts", src, "map").text


COMMONJS = """\
'use strict'
const fs = require('fs')
function helper (a) { return a }
function pub (b) { return b }
function local (c) { return c }
const TIMEOUT = 30 * 1000
const settings = { debug: false }
exports.run = function (cmd, args) {
  return cmd
}
module.exports.stop = async (signal) => {
  return signal
}
module.exports = { pub, alias: helper, settings }
"""


def test_commonjs_exports() -> None:
    assert _rows("m.js", COMMONJS, "map") == [
        "deps: fs",
        "3 fn helper",
        "4 fn pub",
        "7 const settings",
        "8 fn run",
        "11 fn stop",
        "private: local:5 TIMEOUT:6",
    ]
    assert _rows("m.js", COMMONJS, "signatures") == [
        "3 helper (a)",
        "4 pub (b)",
        "5 local (c)",
        "6 const TIMEOUT = 30 * 1000",
        "7 const settings = { debug: false }",
        "8 exports.run = function (cmd, args)",
        "11 module.exports.stop = async (signal)",
    ]


@pytest.mark.parametrize(
    ("src", "rows", "map_rows"),
    [
        ("module.exports = class Runner extends Base {\n  constructor (opts) { super(opts) }\n  run () {}\n}\n",
         ["1 module.exports = class Runner extends Base", "2   constructor (opts)", "3   run ()"],
         ["1 class Runner [constructor:2 run:3]"]),
        ("module.exports = async (npm, args) => {\n  return 1\n}\n",
         ["1 module.exports = async (npm, args)"], ["1 fn module.exports"]),
        ("function Parser () {}\nParser.prototype.write = function (b) {}\nmodule.exports = Parser\n",
         ["1 Parser ()"], ["1 fn Parser"]),
        ("export default function (req, res) {}\n", ["1 export default function (req, res)"], ["1 fn default"]),
    ],
    ids=["class", "arrow", "name", "default-function"],
)
def test_commonjs_and_default_exports_of_one_value(src: str, rows: list[str], map_rows: list[str]) -> None:
    assert _rows("m.js", src, "signatures") == rows
    assert _rows("m.js", src, "map") == map_rows


GO = """\
package p

import "errors"

// Kinds.
const (
\tA Kind = iota // first
\tB
\tc
)

const Version = "1.2.3"

var (
\tErrClosed = errors.New("use of a closed network connection")
\terrOther  = errors.New("x")
)

var _ io.Reader = (*T)(nil)

var DefaultClient *Client

func F() {}
"""


def test_go_exported_constants_and_variables() -> None:
    assert _rows("p.go", GO, "signatures") == [
        "7 const A Kind = iota",
        "8 const B",
        "12 const Version = \"1.2.3\"",
        "15 var ErrClosed = …",
        "21 var DefaultClient *Client",
        "23 F()",
    ]
    assert _rows("p.go", GO, "map") == [
        "deps: errors",
        "7 const A B:8 Version:12",  # unexported ``c``, ``errOther`` and ``_`` are not declarations here
        "15 var ErrClosed DefaultClient:21",
        "23 fn F",
    ]


RUST = """\
pub const K: u32 = 1;
const BUF: usize = 4096;
static mut COUNTER: u64 = 0;
pub(crate) static TABLE: [u8; 4] = [1, 2, 3, 4];
pub trait X {
    const N: usize;
}
impl Y {
    pub const M: &'static str = "a rather long string value here";
}
"""


def test_rust_constants_and_statics() -> None:
    assert _rows("l.rs", RUST, "signatures") == [
        "1 pub const K: u32 = 1",
        "2 const BUF: usize = 4096",
        "3 static mut COUNTER: u64 = 0",
        "4 pub(crate) static TABLE: [u8; 4] = [1, 2, 3, 4]",
        "5 pub trait X",
        "6   const N: usize",
        "8 impl Y",
        "9   pub const M: &'static str = …",
    ]
    assert _rows("l.rs", RUST, "map") == [
        "1 const K", "4 static TABLE", "5 trait X [N:6]", "8 impl Y [M:9]", "private: BUF:2 COUNTER:3"]


def test_a_long_run_of_constants_is_capped_in_map_and_folded_in_signatures() -> None:
    src = "package p\n\nconst (\n" + "".join(f"\tE{i} = {i}\n" for i in range(50)) + ")\n\nfunc F() {}\n"
    rows = _rows("p.go", src, "map")
    assert rows[0].startswith("4 const E0 E1:5 E2:6 ") and rows[0].endswith(" E39:43 +10")
    assert rows[1] == "56 fn F"
    r = read("p.go", src, "map")
    assert r.shown_lines == 41  # forty names and the function; the ten counted ones are not shown
    sig = _rows("p.go", src, "signatures")  # more than FOLD_OVER: the first and last ones and a count
    assert sig[:5] == [f"{4 + i} const E{i} = {i}" for i in range(5)]
    assert sig[5] == "… 42 more constants in lines 9-50 (50 in lines 4-53; mode lines:9-50 shows them)"
    assert sig[6:] == ["51 const E47 = 47", "52 const E48 = 48", "53 const E49 = 49", "56 F()"]


@pytest.mark.parametrize(("path", "src"), [("m.ts", ES_MODULE), ("m.js", COMMONJS), ("p.go", GO), ("l.rs", RUST)])
def test_a_constant_keeps_every_word_or_elides_its_value(path: str, src: str) -> None:
    """A constant's row is its declaration, word for word, except a value that is replaced by
    ``…`` as a whole (longer than MAX_STRING characters, or spanning lines)."""
    lang = detect_language(path, src)
    full = {s.line: s for s in extract_symbols(path, src, lang)}
    constants = [c for c in compact_symbols(path, src, lang) if c.kind in {"constant", "variable", "static"}]
    assert len(constants) >= 2 and any(c.signature.endswith("…") for c in constants) == (path != "m.js")
    for c in constants:
        words = re.findall(r"[\w$']+", c.signature)
        assert words == re.findall(r"[\w$']+", full[c.line].signature)[: len(words)], (c, full[c.line])
        if c.signature.endswith("…"):
            value = src.splitlines()[c.line - 1].split("=", 1)[1].strip().rstrip(";")
            assert len(value) > MAX_STRING or value.endswith(("{", "(")), c


def test_python_constants_are_unchanged_and_share_a_map_row() -> None:
    src = 'MAX_RETRIES = 3\nTIMEOUT: float = 2.5\nNAME = "a name longer than the limit for values"\n\ndef f(): pass\n'
    assert _rows("m.py", src, "signatures") == [
        "1 MAX_RETRIES = 3", "2 TIMEOUT: float = 2.5", "3 NAME = …", "5 f()"]
    assert _rows("m.py", src, "map") == ["1 const MAX_RETRIES TIMEOUT:2 NAME:3", "5 fn f"]


def test_cli_map_of_a_commonjs_module(tmp_path: Path) -> None:
    f = tmp_path / "lib.js"
    f.write_text(COMMONJS)
    exe = Path(sys.executable).with_name("lean-ctx")
    p = subprocess.run([str(exe), "read", "--mode", "map", "lib.js"], check=False, capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env={**os.environ, "LEAN_CTX_NO_DAEMON": "1"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "8 fn run" in lines and "11 fn stop" in lines and "4 fn pub" in lines
    assert "private: local:5 TIMEOUT:6" in lines
