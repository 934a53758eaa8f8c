"""Declarations per language: names, kinds and line numbers from real snippets; no bodies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.modes.compact import compact_symbols
from leanctx.context.symbols import (
    Symbol,
    extract_imports,
    extract_symbols,
    uses_tree_sitter,
)

SNIPPETS = Path(__file__).parent / "snippets"

# (file, [(line, kind, name, depth)], a substring that must appear in some signature, body text never shown)
EXPECTED: dict[str, tuple[list[tuple[int, str, str, int]], str, str]] = {
    "sample.py": ([(5, "class", "Shape", 0), (8, "method", "__init__", 1), (11, "method", "area", 1),
                   (16, "function", "distance", 0), (21, "function", "fetch", 0)],
                  "def distance(a: tuple[float, float], b: tuple[float, float]) -> float", "** 0.5"),
    "sample.js": ([(3, "class", "Store", 0), (4, "method", "constructor", 1), (8, "method", "get", 1),
                   (13, "function", "total", 0), (17, "function", "double", 0)],
                  "export function total(prices)", "reduce"),
    "sample.ts": ([(3, "interface", "Repo", 0), (4, "method", "find", 1), (8, "type", "Id", 0),
                   (10, "enum", "Color", 0), (15, "class", "MemoryRepo", 0), (18, "method", "find", 1),
                   (27, "function", "makeRepo", 0), (31, "function", "sum", 0)],
                  "export class MemoryRepo implements Repo<User>", "push(item)"),
    "sample.tsx": ([(3, "interface", "Props", 0), (7, "function", "Header", 0), (11, "class", "Panel", 0),
                    (12, "method", "render", 1)], "export function Header({ title }: Props)", "<h1>"),
    "sample.rs": ([(3, "struct", "Cache", 0), (7, "enum", "Event", 0), (12, "trait", "Store", 0),
                   (13, "method", "get", 1), (16, "impl", "Cache", 0), (17, "method", "new", 1),
                   (21, "method", "insert", 1), (26, "function", "hash", 0), (30, "type", "Map", 0)],
                  "pub fn insert(&mut self, k: String, v: String)", "HashMap::new()"),
    "sample.go": ([(5, "struct", "Point", 0), (9, "interface", "Shape", 0), (10, "method", "Area", 1),
                   (13, "method", "Dist", 0), (17, "function", "NewPoint", 0)],
                  "func (p Point) Dist(q Point) float64", "Hypot"),
    "Sample.java": ([(5, "class", "Cart", 0), (8, "constructor", "Cart", 1), (12, "method", "size", 1),
                     (17, "interface", "Priced", 0), (18, "method", "price", 1), (21, "enum", "Size", 0)],
                    "public int size()", "items.size()"),
    "sample.c": ([(3, "struct", "point", 0), (8, "type", "point_t", 0), (10, "function", "add", 0),
                  (14, "function", "main", 0)], "static int add(int a, int b)", "printf"),
    "sample.cpp": ([(3, "namespace", "shop", 0), (5, "class", "Item", 1), (7, "method", "Item", 2),
                    (8, "method", "price", 2), (13, "struct", "Pair", 1), (17, "function", "total", 1)],
                   "int price() const", "return 42"),
    "Sample.cs": ([(3, "namespace", "Shop", 0), (5, "interface", "IPriced", 1), (10, "class", "Item", 1),
                   (12, "property", "Name", 2), (14, "method", "Price", 2), (20, "enum", "Kind", 1)],
                  "public class Item : IPriced", "1.0m"),
    "sample.rb": ([(3, "module", "Shop", 0), (4, "class", "Cart", 1), (5, "method", "initialize", 2),
                   (9, "method", "total", 2), (15, "method", "helper", 0)], "def initialize(items)", "@items.sum"),
    "sample.php": ([(6, "interface", "Priced", 0), (7, "method", "price", 1), (10, "class", "Cart", 0),
                    (13, "method", "price", 1), (18, "function", "helper", 0)],
                   "public function price(): float", "array_sum"),
    "sample.kt": ([(5, "class", "Item", 0), (7, "interface", "Priced", 0), (11, "class", "Cart", 0),
                   (12, "method", "price", 1), (17, "function", "helper", 0)],
                  "override fun price(): Double", "sumOf"),
    "sample.swift": ([(3, "protocol", "Priced", 0), (7, "struct", "Item", 0), (11, "class", "Cart", 0),
                      (14, "method", "price", 1), (19, "function", "helper", 0)],
                     "func helper(x: Int) -> Int", "x * 2"),
    "sample.scala": ([(5, "trait", "Priced", 0), (9, "class", "Item", 0), (11, "class", "Cart", 0),
                      (14, "method", "add", 1), (17, "object", "Cart", 0), (18, "method", "empty", 1)],
                     "def add(item: Item): Cart", "item :: items"),
    "sample.sh": ([(4, "function", "log", 0), (8, "function", "build", 0)], "function build", "make all"),
    "sample.lua": ([(5, "function", "Cart.new", 0), (9, "function", "Cart:total", 0), (14, "function", "helper", 0)],
                   "local function helper(x)", "setmetatable"),
    "sample.ex": ([(1, "module", "Shop.Cart", 0), (4, "function", "new", 1), (8, "function", "total", 1)],
                  "defp total(cart)", "Enum.sum"),
    "sample.hs": ([(5, "type", "Item", 0), (7, "class", "Priced", 0), (10, "function", "total", 0),
                   (13, "function", "helper", 0)], "total :: [Item] -> Double", "sum (map"),
    "sample.zig": ([(3, "struct", "Point", 0), (7, "method", "add", 1), (12, "function", "main", 0),
                    (16, "function", "helper", 0)], "pub fn add(self: Point, other: Point) Point", "std.debug"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_declarations(name: str) -> None:
    text = (SNIPPETS / name).read_text()
    lang = detect_language(name, text)
    assert uses_tree_sitter(lang), lang
    syms = extract_symbols(name, text)
    got = {(s.line, s.kind, s.name, s.depth) for s in syms}
    expected, sig, body = EXPECTED[name]
    for item in expected:
        assert item in got, f"{item} not in {sorted(got)}"
    assert any(sig == s.signature for s in syms), [s.signature for s in syms]
    rendered = read(name, text, "signatures")
    assert body not in rendered.text
    for line, _, nm, depth in expected:
        assert any(r.startswith(f"{line} {'  ' * depth}") and r[len(f"{line} {'  ' * depth}")] != " "
                   and nm.split(".")[-1].split(":")[-1] in r for r in rendered.text.splitlines()), (line, nm)


def test_all_twenty_languages_are_covered() -> None:
    langs = {detect_language(n) for n in EXPECTED}
    assert len(langs) == 20


def test_exported_flags() -> None:
    rs = {s.name: s.exported for s in extract_symbols("x.rs", (SNIPPETS / "sample.rs").read_text())}
    assert rs["hash"] and not rs["Map"]
    go = {s.name: s.exported for s in extract_symbols("x.go", (SNIPPETS / "sample.go").read_text())}
    assert go["NewPoint"]
    ex = {s.name: s.exported for s in extract_symbols("x.ex", (SNIPPETS / "sample.ex").read_text())}
    assert ex["new"] and not ex["total"]
    ts = {s.name: s.exported for s in extract_symbols("x.tsx", (SNIPPETS / "sample.tsx").read_text())}
    assert ts["Header"] and not ts["Props"]


def test_regex_fallback_for_other_languages() -> None:
    dart = "class Cart {\n  int total() {\n    return 1;\n  }\n}\n\nvoid main() {}\n\nenum Size { s, m }\n"
    syms = extract_symbols("cart.dart", dart)
    assert [(s.line, s.kind, s.name) for s in syms] == [(1, "class", "Cart"), (9, "enum", "Size")]
    nim = "proc add(a, b: int): int =\n  a + b\n\ntype\n  Point = object\n"
    assert [(s.line, s.name) for s in extract_symbols("m.nim", nim)][0] == (1, "add")
    r = read("m.nim", nim, "signatures")
    assert "pattern match" in r.text and "1 proc add(a, b: int): int" in r.text.splitlines()


def test_imports() -> None:
    assert [m for _, m in extract_imports("python", (SNIPPETS / "sample.py").read_text())] == ["os", "typing"]
    go = 'package x\n\nimport (\n\t"fmt"\n\tstr "strings"\n)\n\nvar s = "not an import"\n'
    assert [m for _, m in extract_imports("go", go)] == ["fmt", "strings"]
    assert [m for _, m in extract_imports("rust", "use std::io;\nmod util;\n")] == ["std::io", "util"]


@pytest.mark.parametrize(
    ("path", "lang"),
    [("a/b.py", "python"), ("x.tsx", "tsx"), ("Makefile", "make"), ("lib.rs", "rust"), ("x.hpp", "cpp"),
     ("run", "text"), ("Cargo.lock", "lock"), ("conf.yml", "yaml")],
)
def test_detect_language(path: str, lang: str) -> None:
    assert detect_language(path) == lang


def test_shebang_detection() -> None:
    assert detect_language("tool", "#!/usr/bin/env python3\nprint(1)\n") == "python"
    assert detect_language("run", "#!/bin/bash\necho\n") == "bash"


# The whole ``signatures`` output of every snippet (footer aside): one line per declaration,
# ``line indentation signature``. A lost declaration, parameter or return type changes a row.
ROWS: dict[str, list[str]] = {
    "Sample.cs": [
        "3 namespace Shop",
        "5   public interface IPriced",
        "7     decimal Price()",
        "10   public class Item : IPriced",
        "12     public string Name",
        "14     public decimal Price()",
        "20   public enum Kind",
    ],
    "Sample.java": [
        "5 public class Cart",
        "8   public Cart(List<String> items)",
        "12   public int size()",
        "17 interface Priced",
        "18   double price()",
        "21 enum Size",
    ],
    "sample.c": [
        "3 struct point",
        "8 typedef struct point point_t",
        "10 static int add(int a, int b)",
        "14 int main(void)",
    ],
    "sample.cpp": [
        "3 namespace shop",
        "5   class Item",
        "7     Item(std::string name)",
        "8     int price() const",
        "13   struct Pair",
        "17   int total(int a, int b)",
    ],
    "sample.ex": [
        "1 defmodule Shop.Cart",
        "4   def new(items)",
        "8   defp total(cart)",
    ],
    "sample.go": [
        "5 type Point struct",
        "9 type Shape interface",
        "10   Area() float64",
        "13 func (p Point) Dist(q Point) float64",
        "17 NewPoint(x, y float64) Point",
    ],
    "sample.hs": [
        "5 data Item",
        "7 class Priced a",
        "8   price' :: a -> Double",
        "10 total :: [Item] -> Double",
        "13 helper :: Int -> Int",
    ],
    "sample.js": [
        "3 export class Store",
        "4   constructor(items)",
        "8   get(key)",
        "13 export total(prices)",
        "17 const double = (x)",
    ],
    "sample.kt": [
        "5 data class Item(val name: String, val price: Double)",
        "7 interface Priced",
        "8   price(): Double",
        "11 class Cart(private val items: List<Item>) : Priced",
        "12   override price(): Double",
        "17 helper(x: Int): Int",
    ],
    "sample.lua": [
        "5 Cart.new(items)",
        "9 Cart:total()",
        "14 local helper(x)",
    ],
    "sample.php": [
        "2 namespace Shop",
        "6 interface Priced",
        "7   public price(): float",
        "10 class Cart implements Priced",
        "11   public __construct(private array $items)",
        "13   public price(): float",
        "18 helper(int $x): int",
    ],
    "sample.py": [
        "5 class Shape",
        "8   __init__(name: str)",
        "11   @property area()->float",
        "16 distance(a: tuple[float, float], b: tuple[float, float])->float",
        "21 async fetch(url: str)->bytes",
    ],
    "sample.rb": [
        "3 module Shop",
        "4   class Cart",
        "5     initialize(items)",
        "9     def total",
        "15 helper(x)",
    ],
    "sample.rs": [
        "3 pub struct Cache",
        "7 pub enum Event",
        "12 pub trait Store",
        "13   get(&self, key: &str)->Option<&String>",
        "16 impl Cache",
        "17   pub new()->Self",
        "21   pub insert(&mut self, k: String, v: String)",
        "26 pub hash(s: &str)->u64",
        "30 type Map = HashMap<String, u32>",
    ],
    "sample.scala": [
        "5 trait Priced",
        "6   def price: Double",
        "9 case class Item(name: String, price: Double)",
        "11 class Cart(items: List[Item]) extends Priced",
        "12   def price: Double",
        "14   add(item: Item): Cart",
        "17 object Cart",
        "18   def empty: Cart",
    ],
    "sample.sh": [
        "4 log()",
        "8 function build",
    ],
    "sample.swift": [
        "3 protocol Priced",
        "4   price()->Double",
        "7 struct Item",
        "11 class Cart: Priced",
        "14   price()->Double",
        "19 helper(x: Int)->Int",
    ],
    "sample.ts": [
        "3 export interface Repo<T>",
        "4   find(id: number): T | undefined",
        "5   save(item: T): void",
        "8 export type Id = number | string",
        "10 export enum Color",
        "15 export class MemoryRepo implements Repo<User> {private items: User[]=[]}",  # its fields
        "18   find(id: number): User | undefined",
        "22   save(item: User): void",
        "27 export makeRepo(): MemoryRepo",
        "31 export const sum = (a: number, b: number): number",
    ],
    "sample.tsx": [
        "3 interface Props",
        "7 export Header({ title }: Props)",
        "11 export class Panel extends React.Component<Props>",
        "12   render()",
    ],
    "sample.zig": [
        "3 const Point = struct",
        "7   pub fn add(self: Point, other: Point) Point",
        "12 pub fn main() void",
        "16 fn helper(x: i32) i32",
    ],
}


@pytest.mark.parametrize("name", sorted(ROWS))
def test_signatures_rows(name: str) -> None:
    text = (SNIPPETS / name).read_text()
    r = read(name, text, "signatures")
    assert r.text.splitlines()[:-1] == ROWS[name]
    assert r.text.splitlines()[-1] == f"[signatures · {r.line_count} lines · {r.omitted_lines} lines not shown]"
    assert r.shown_lines == len(ROWS[name])


def test_rows_cover_every_snippet() -> None:
    assert sorted(ROWS) == sorted(p.name for p in SNIPPETS.iterdir()) == sorted(EXPECTED)


_WORD = re.compile(r"[A-Za-z_$][\w$']*|\d+")
# words the compact rendering may leave out of a declaration's source text: the function keyword
# before ``name(``, Python's receiver, and ``None`` of ``__init__ -> None``
_DROPPABLE = {"def", "fn", "func", "fun", "function", "self", "cls", "None"}


def _lost_words(source_sig: str, compact_sig: str) -> tuple[list[str], list[str]]:
    """Words of the declaration's source text missing from its compact form (in order), and
    words of the compact form that are not in the source text."""
    want, got = _WORD.findall(source_sig), _WORD.findall(compact_sig)
    missing: list[str] = []
    j = 0
    for w in want:
        if j < len(got) and got[j] == w:
            j += 1
        else:
            missing.append(w)
    return missing, got[j:]


def _without_fields(c: Symbol, text: str, lang: str) -> str:
    """A TS/JS class's compact signature without the fields ``signatures`` writes after it
    (``fields``), whose words are checked to be words of the class body's source, in order."""
    if c.kind != "class" or lang not in ("typescript", "tsx", "javascript") or not c.signature.endswith("}"):
        return c.signature
    sig, props = c.signature.split(" {", 1)
    body = "\n".join(text.splitlines()[c.line : c.end_line])
    assert not _lost_words(body, props)[1], (c.signature, body)
    return sig


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_parameter_or_return_type_is_lost(name: str) -> None:
    """Every word of every declaration's source text (names, parameters, types, return types)
    is in its ``signatures`` row, in order, apart from the syntax the format drops."""
    text = (SNIPPETS / name).read_text()
    lang = detect_language(name, text)
    full = extract_symbols(name, text, lang)
    compact = compact_symbols(name, text, lang)
    assert [(s.line, s.name) for s in compact] == [(s.line, s.name) for s in full]
    for f, c in zip(full, compact, strict=True):
        missing, extra = _lost_words(f.signature, _without_fields(c, text, lang))
        assert not extra, (f.signature, c.signature)
        assert set(missing) <= _DROPPABLE and len(missing) <= 3, (f.signature, c.signature, missing)
        if "None" in missing:
            assert lang == "python" and c.name == "__init__", c


def test_lost_words_detects_losses() -> None:
    """The check above can fail: a dropped parameter, type or return type is reported."""
    sig = "def fetch(url: str, timeout: float) -> bytes"
    assert _lost_words(sig, "fetch(url: str, timeout: float)->bytes") == (["def"], [])
    assert _lost_words(sig, "fetch(url: str)->bytes")[0] == ["def", "timeout", "float"]
    assert _lost_words(sig, "fetch(url: str, timeout: float)")[0] == ["def", "bytes"]
    assert _lost_words(sig, "fetch(url, timeout: float)->bytes")[0] == ["def", "str"]


# One declaration per language with a multi-line parameter list, a comment and a default, and
# the row it must become: every parameter, type and return type stays.
MULTILINE: list[tuple[str, str, str]] = [
    ("a.py", "def f(\n    a: int,  # first\n    b: list[str] = [],\n) -> dict[str, int]:\n    return {}\n",
     "1 f(a: int, b: list[str]=[])->dict[str, int]"),
    ("a.ts", "export function f(\n  a: number, // first\n  b: string[] = [],\n): Map<string, number> {\n  return m\n}\n",
     "1 export f(a: number, b: string[]=[]): Map<string, number>"),
    ("a.js", "function f(\n  a, // first\n  b = [],\n) {\n  return a\n}\n", "1 f(a, b=[])"),
    ("a.rs", "pub fn f(\n    a: i32, // first\n    b: Vec<String>,\n) -> HashMap<String, i32> {\n    m\n}\n",
     "1 pub f(a: i32, b: Vec<String>)->HashMap<String, i32>"),
    ("a.go", "package x\n\nfunc F(\n\ta int, // first\n\tb []string,\n) (map[string]int, error) {\n\treturn nil, nil\n}\n",
     "3 F(a int, b []string) (map[string]int, error)"),
    ("A.java", "class A {\n  public Map<String, Integer> f(\n      int a, // first\n      List<String> b) {\n    return m;\n  }\n}\n",
     "2   public Map<String, Integer> f(int a, List<String> b)"),
    ("a.c", "static int f(\n    int a, /* first */\n    const char *b) {\n  return a;\n}\n",
     "1 static int f(int a, const char *b)"),
    ("a.cpp", "std::map<std::string, int> f(\n    int a, // first\n    std::vector<std::string> b = {}) {\n  return m;\n}\n",
     "1 std::map<std::string, int> f(int a, std::vector<std::string> b={})"),
    ("A.cs", "class A {\n  public Dictionary<string, int> F(\n      int a, // first\n      string b = \"x\") {\n    return m;\n  }\n}\n",
     "2   public Dictionary<string, int> F(int a, string b=\"x\")"),
    ("a.kt", "fun f(\n    a: Int, // first\n    b: List<String> = listOf(),\n): Map<String, Int> {\n    return m\n}\n",
     "1 f(a: Int, b: List<String>=listOf()): Map<String, Int>"),
    ("a.swift", "func f(\n    a: Int, // first\n    b: [String] = []\n) -> [String: Int] {\n    return m\n}\n",
     "1 f(a: Int, b: [String]=[])->[String: Int]"),
    ("a.php", "<?php\nfunction f(\n    int $a, // first\n    array $b = []\n): array {\n    return $b;\n}\n",
     "2 f(int $a, array $b=[]): array"),
    ("a.scala", "object A {\n  def f(\n      a: Int, // first\n      b: List[String] = Nil\n  ): Map[String, Int] = m\n}\n",
     "2   f(a: Int, b: List[String]=Nil): Map[String, Int]"),
    ("a.rb", "def f(\n  a, # first\n  b = []\n)\n  a\nend\n", "1 f(a, b=[])"),
]


@pytest.mark.parametrize(("path", "src", "row"), MULTILINE, ids=[m[0] for m in MULTILINE])
def test_multiline_parameters_keep_every_parameter_and_the_return_type(path: str, src: str, row: str) -> None:
    assert row in read(path, src, "signatures").text.splitlines()


# Less common syntax: every declaration is found, with its generic parameters and, for a type
# alias, its value (the type); a declaration's body (a macro's rules) is not shown.
UNCOMMON: list[tuple[str, str, list[str]]] = [
    ("a.ts", "export type Pair<T> = [T, T] | Array<Record<string, T>>;\ntype Fn<A = string> = (a: A) => void;\n",
     ["1 export type Pair<T> = [T, T] | Array<Record<string, T>>", "2 type Fn<A = string> = (a: A) => void"]),
    ("a.rs", "pub type Res<T> = std::result::Result<T, Error>;\n", ["1 pub type Res<T> = std::result::Result<T, Error>"]),
    ("a.go", "package p\n\ntype Set[T comparable] = map[T]struct{}\n", ["3 Set[T comparable] = map[T]struct{}"]),
    ("a.ts", "namespace NS {\n  export interface I { m(): void }\n}\nmodule M { function f(x: number): void {} }\n",
     ["1 namespace NS", "2   export interface I", "2     m(): void", "4 module M", "4   f(x: number): void"]),
    ("a.rs", 'extern "C" {\n    fn cfun(x: i32) -> i32;\n}\nmacro_rules! m { () => { 1 } }\n',
     ['1 extern "C"', "2   cfun(x: i32)->i32", "4 macro_rules! m"]),
    ("a.ts", ("export function over(x: string): string;\nexport function over(x: number): number;\n"
              "export function over(x: any): any { return x; }\n"),
     ["1 export over(x: string): string", "2 export over(x: number): number", "3 export over(x: any): any"]),
    ("a.rs", ("impl<T, U> Tr<U> for W<T>\nwhere\n    T: Clone,\n{\n    fn go<'a>(&'a self, x: &'a T) -> Option<&'a U>\n"
              "    where\n        T: 'a,\n    {\n        None\n    }\n}\n"),
     ["1 impl<T, U> Tr<U> for W<T> where T: Clone", "5   go<'a>(&'a self, x: &'a T)->Option<&'a U> where T: 'a"]),
    ("a.py", ("type Pair[T] = tuple[T, T]\n\n@cache_for(60)\nasync def fetch[T](url: str, *, kind: type[T]) -> T:\n    pass\n\n"
              "class Outer[T](Base):\n    class Inner:\n        @overload\n        def m(self, a: int, /, *, c: int = 1) -> int: ...\n"),
     ["1 type Pair[T] = tuple[T, T]", "3 @cache_for(60) async fetch[T](url: str, *, kind: type[T])->T",
      "7 class Outer[T](Base)", "8   class Inner", "9     @overload m(a: int, /, *, c: int=1)->int"]),
    ("a.go", "package p\n\nfunc Map[T any, U comparable](xs []T, f func(T) U) []U {\n\treturn nil\n}\n",
     ["3 Map[T any, U comparable](xs []T, f func(T) U) []U"]),
    ("a.swift", 'func greet(name: String = "x", times: Int = 1) -> String { return name }\n',
     ['1 greet(name: String="x", times: Int=1)->String']),  # a default beside its parameter: no spaces
]


@pytest.mark.parametrize(("path", "src", "rows"), UNCOMMON, ids=[f"{i}-{u[0]}" for i, u in enumerate(UNCOMMON)])
def test_uncommon_syntax_keeps_every_declaration_whole(path: str, src: str, rows: list[str]) -> None:
    assert read(path, src, "signatures").text.splitlines()[:-1] == rows
    lang = detect_language(path, src)
    full, compact = extract_symbols(path, src, lang), compact_symbols(path, src, lang)
    for f, c in zip(full, compact, strict=True):
        missing, extra = _lost_words(f.signature, _without_fields(c, src, lang))
        assert not extra and set(missing) <= _DROPPABLE, (f.signature, c.signature, missing)


# Preprocessor conditionals and ``extern "C" { }`` blocks hold several declarations: each keeps
# its own line and signature (they were once taken as a prefix of the block, so every function
# of an ``#ifdef`` was reported at the ``#ifdef``'s line with the bodies before it).
C_BLOCKS: list[tuple[str, str, list[str]]] = [
    ("a.c", ("#ifndef FEATURE\nint one(int a) {\n    return a;\n}\nstatic int two(void) { return 2; }\n"
             "#else\nint one(int a) { return -a; }\n#endif\n#if defined(X)\nvoid three(char *s);\n"
             "#elif defined(Y)\nvoid four(void);\n#endif\n#ifdef Z\n#ifdef W\nlong five(long x) { return x; }\n"
             "#endif\n#endif\n"),
     ["2 int one(int a)", "5 static int two(void)", "7 int one(int a)", "10 void three(char *s)",
      "12 void four(void)", "16 long five(long x)"]),
    ("a.cpp", ('extern "C" {\nint cfun(int x);\nvoid other(void);\n}\nnamespace ns {\n'
               "template <typename T> T id(T x) { return x; }\n#ifdef WIN\nvoid win();\n#endif\n}\n"),
     ["2 int cfun(int x)", "3 void other(void)", "5 namespace ns", "6   template <typename T> T id(T x)",
      "8   void win()"]),
    ("b.cpp", "class P {\npublic:\n  P(int a, int b);\n};\nP::P(int a, int b)\n    : x(a),\n      y(b) {\n}\n",
     ["1 class P", "3   P(int a, int b)", "5 P::P(int a, int b) : …"]),  # member initializers elided
]


@pytest.mark.parametrize(("path", "src", "rows"), C_BLOCKS, ids=[c[0] for c in C_BLOCKS])
def test_declarations_inside_preprocessor_blocks_keep_their_own_line(path: str, src: str, rows: list[str]) -> None:
    assert read(path, src, "signatures").text.splitlines()[:-1] == rows
    lines = [s.line for s in extract_symbols(path, src, detect_language(path, src))]
    assert lines == [int(r.split()[0]) for r in rows]  # map and search use the same lines
