"""``signatures`` writes the property declarations of an exported TypeScript or JavaScript class on
the class's row, in braces like an exported interface's properties (``fields``): TypeScript fields
with their modifiers and type, JavaScript public and static fields, a short initializer whole and a
longer one ``=…``, a function-valued field its parameters (``=(e: Event)=>…``); private members
(``private``, ``#name``) by the private rule of Python data-class fields (their name, the rest only
when as short as ``MAX_DEFAULT``); constructor parameter properties on the constructor's row.
Proven on the rows, against what Node itself says a JavaScript class's fields are, and through
the real CLI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from leanctx.context.modes import read

from .test_signatures_fields import cli_signatures


def _rows(path: str, src: str, mode: str = "signatures") -> list[str]:
    return read(path, src, mode).text.splitlines()


TS = '''\
export class Foo<T> extends Base implements I {
  private readonly bar: Map<string, number>;
  static count = 0;
  baz?: string; // optional
  declare qux: number;
  protected p!: T;
  #secret = 1;
  public readonly name: string = "a long default string value";
  @Input() label: string;
  handler = (e: Event): void => {
    this.count++;
  };
  private onClick = () => {};
  private cache = new Map<string, number>();
  private n: number = 0;
  static { init(); }
  [key: string]: unknown;
  constructor(private readonly x: X, public y = 2, z: number) { super(); }
  abstract get size(): number;
}
'''


def test_typescript_class_fields_on_the_class_row() -> None:
    for path in ("a.ts", "a.tsx"):
        assert _rows(path, TS)[:-1] == [
            ("1 export class Foo<T> extends Base implements I {private readonly bar; static count=0; baz?: string; "
             "declare qux: number; protected p!: T; #secret=1; public readonly name: string=…; "
             "@Input() label: string; handler=(e: Event): void=>…; private onClick=() => {}; private cache=…; "
             "private n: number=0; [key: string]: unknown}"),
            # parameter properties are on the constructor's row, not repeated on the class's
            "18   constructor(private readonly x: X, public y=2, z: number)",
            "19   abstract get size(): number",
        ], path


def test_private_members_follow_the_private_field_rule() -> None:
    """``private`` and ``#name``: the name, with its type and initializer only when they take no
    more than ``MAX_DEFAULT`` characters; a longer initializer is ``=…``, a longer type goes."""
    src = ("export class P {\n  private a: string;\n  private b: Record<string, string[]>;\n"
           "  private c = 'x';\n  private d = computeSomethingLong();\n  #e: number;\n"
           "  #f = new WeakMap<object, string>();\n  protected g: Record<string, string[]>;\n}\n")
    assert _rows("p.ts", src)[0] == (
        "1 export class P {private a: string; private b; private c='x'; private d=…; #e: number; #f=…; "
        "protected g: Record<string, string[]>}")


def test_which_typescript_classes_list_their_fields() -> None:
    """Exported ones, by the interface rule: ``export``, an export list, inside ``declare``; a class
    of an exported namespace only when it says ``export``. Another class keeps its row alone."""
    src = '''\
class Hidden { a: number; }
class Listed { b: string; }
export { Listed };
export declare class Ambient {
  private _x;
  readonly y: number;
  get w(): number;
}
export namespace NS {
  class Inner { c: number; }
  export class Outer { d: number; }
}
export abstract class Shape { abstract area: number; readonly sides = 0; }
export class Empty {}
export class OnlyMethods { m(): void {} }
export default class { e = 1; }
'''
    assert _rows("m.ts", src)[:-1] == [
        "1 class Hidden",
        "2 class Listed {b: string}",
        "4 export declare class Ambient {private _x; readonly y: number}",
        "7   get w(): number",
        "9 export namespace NS",
        "10   class Inner",
        "11   export class Outer {d: number}",
        "13 export abstract class Shape {abstract area: number; readonly sides=0}",
        "14 export class Empty",
        "15 export class OnlyMethods",
        "15   m(): void",
        "16 export default class {e=1}",
    ]


JS = '''\
class Counter extends Base {
  #secret = 1;
  static x = 2;
  y;
  z = "hello";
  static #count = 0;
  label = "a longer string than twelve";
  handler = (a, b) => {
    return a + b;
  };
  static async *gen() {}
  constructor(a) {
    super();
  }
}
module.exports = Counter;
module.exports.Other = class Other {
  w = [];
};
class Local { v = 1; }
'''


def test_javascript_class_fields_on_the_class_row() -> None:
    assert _rows("c.js", JS)[:-1] == [
        ("1 class Counter extends Base {#secret=1; static x=2; y; z=\"hello\"; static #count=0; label=…; "
         "handler=(a, b)=>…}"),
        "11   static async *gen()",
        "12   constructor(a)",
        "17 module.exports.Other = class Other {w=[]}",
        "20 class Local",  # not exported: a helper of its module
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_row_names_the_fields_node_sees(tmp_path: Path) -> None:
    """The public instance and static field names on the row are those Node reports for the class
    (``Object.keys`` of an instance and of the class; ``#private`` ones are not visible there)."""
    script = JS.replace("extends Base ", "").replace("    super();\n", "") + (
        "const k = (o) => Object.keys(o);\n"
        "console.log(JSON.stringify({inst: k(new Counter()), stat: k(Counter).filter((n) => n !== 'Other')}));\n")
    (tmp_path / "c.js").write_text(script)
    out = subprocess.run(["node", str(tmp_path / "c.js")], check=True, capture_output=True, text=True,
                         timeout=60).stdout
    seen = json.loads(out)
    row = _rows("c.js", JS)[0]
    written = [f.strip() for f in row.split("{", 1)[1].rstrip("}").split(";")]
    names = [re.split(r"[=:?!]", f)[0] for f in written]
    static = [n.split()[-1] for n in names if n.startswith("static ") and not n.split()[-1].startswith("#")]
    inst = [n for n in names if " " not in n and not n.startswith("#")]
    assert inst == seen["inst"] and static == seen["stat"], (names, seen)


def test_map_lists_no_fields() -> None:
    rows = _rows("a.ts", TS, "map")
    assert rows[0] == "1 class Foo [constructor:18 size:19]"


def test_cli_signatures_shows_class_fields(tmp_path: Path) -> None:
    out = cli_signatures(tmp_path, {"foo.ts": TS, "c.js": JS})
    assert any(r.startswith("1 export class Foo<T> extends Base implements I {private readonly bar; ") for r in out)
    assert "17 module.exports.Other = class Other {w=[]}" in out
