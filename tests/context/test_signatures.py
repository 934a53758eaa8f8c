"""Declarations per language: names, kinds and line numbers from real snippets; no bodies."""

from __future__ import annotations

from pathlib import Path

import pytest

from leanctx.context.langs import detect_language
from leanctx.context.modes import read
from leanctx.context.symbols import extract_imports, extract_symbols, uses_tree_sitter

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
        assert any(r.startswith(f"{line}: {'  ' * depth}") and nm.split(".")[-1].split(":")[-1] in r
                   for r in rendered.text.splitlines()), (line, nm)


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
    assert "pattern match" in r.text and "1: proc add(a, b: int): int" in r.text


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
