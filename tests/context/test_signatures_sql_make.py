"""``signatures`` and ``map`` of SQL scripts and Makefiles, on real files (``tests/fixtures/outline``).

SQL: every ``CREATE`` statement is a declaration (``symbols.sql``): a table with its columns, a
view with the columns its query gives, an index, a trigger without its body, a function with its
parameters and return type. SQLite itself says what ``events.sql`` creates (``sqlite_master``,
``PRAGMA table_info``), and the rows must name exactly that. Make: rules with their
prerequisites, variables with their values, ``define``s, ``.PHONY`` (``symbols.make``); GNU make's
own database (``make -p``) says which variables a Makefile defines, and every one must have a row,
also where the tree-sitter grammar fails on a line. Through ``read`` and the real CLI.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.context.modes import read
from leanctx.context.symbols import extract_imports, extract_symbols

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "outline"


def _rows(path: str, text: str, mode: str) -> list[str]:
    return read(path, text, mode).text.splitlines()[:-1]  # the footer is checked on its own


def _sql(name: str) -> str:
    return (FIXTURES / "sql" / name).read_text()


# ---------------------------------------------------------------------- SQLite: events.sql
def test_sqlite_schema_rows_are_what_sqlite_creates() -> None:
    text = _sql("events.sql")
    db = sqlite3.connect(":memory:")
    db.executescript(text)
    created = {(t, n) for t, n, sql in db.execute("SELECT type, name, sql FROM sqlite_master")
               if sql is not None and not sql.startswith("CREATE TABLE '")}  # FTS5 shadow tables
    syms = extract_symbols("events.sql", text)
    assert {(s.kind, s.name) for s in syms} == created
    assert len(syms) == len(re.findall(r"(?m)^CREATE\b", text)) == 8
    for table in ("events", "events_fts_state", "projection_checkpoints"):
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        sig = next(s.signature for s in syms if s.name == table)
        inside = sig[sig.index("(") + 1 :]
        at = [inside.find(f"{c} ") for c in columns]
        assert -1 not in at and at == sorted(at), (table, sig)  # every column, in order


def test_sqlite_schema_signatures_and_map() -> None:
    text = _sql("events.sql")
    sig = _rows("events.sql", text, "signatures")
    assert sig[0] == (
        "4 CREATE TABLE IF NOT EXISTS events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, "
        "version INTEGER NOT NULL CHECK (version >= 1), kind TEXT NOT NULL, schema_version INTEGER NOT NULL, "
        "ts TEXT NOT NULL, actor TEXT, to_agent TEXT, project TEXT, channel TEXT, consistency TEXT NOT NULL "
        "CHECK (…), correlation_id TEXT, causation_id INTEGER, idempotency_key TEXT, payload BLOB NOT NULL, "
        "prev_hash TEXT NOT NULL, hash TEXT NOT NULL, UNIQUE (stream, version))")
    assert sig[1:] == [
        ("25 CREATE UNIQUE INDEX IF NOT EXISTS events_idempotency_key ON events (idempotency_key) "
        "WHERE idempotency_key IS NOT NULL"),
        "28 CREATE INDEX IF NOT EXISTS events_causation ON events (causation_id) WHERE causation_id IS NOT NULL",
        "32 CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events",  # body not shown
        "37 CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events",
        ("45 CREATE VIRTUAL TABLE IF NOT EXISTS events_fts USING fts5(kind, stream, who, body, content = '', "
        "tokenize = '…')"),
        ("51 CREATE TABLE IF NOT EXISTS events_fts_state (id INTEGER PRIMARY KEY CHECK (id = 1), "
        "position INTEGER NOT NULL)"),
        ("59 CREATE TABLE IF NOT EXISTS projection_checkpoints (name TEXT PRIMARY KEY, version INTEGER NOT NULL, "
        "position INTEGER NOT NULL)"),
    ]
    assert _rows("events.sql", text, "map") == [
        "4 table events", "25 index events_idempotency_key", "28 index events_causation",
        "32 trigger events_no_update", "37 trigger events_no_delete", "45 table events_fts",
        "51 table events_fts_state", "59 table projection_checkpoints"]
    footer = read("events.sql", text, "map").text.splitlines()[-1]
    assert "8 declarations (pattern match)" in footer
    # a trigger spans its BEGIN … END body (the task mode keeps a declaration's lines by them)
    spans = {s.name: (s.line, s.end_line) for s in extract_symbols("events.sql", text)}
    assert spans["events_no_update"] == (32, 35) and spans["events"] == (4, 23)


# ---------------------------------------------------------------------- PostgreSQL
def test_postgresql_extension_every_create_statement() -> None:
    text = _sql("cube--1.2.sql")
    syms = extract_symbols("cube--1.2.sql", text)
    starts = [i for i, line in enumerate(text.splitlines(), 1) if line.startswith("CREATE ")]
    assert [s.line for s in syms] == starts  # the psql ``\echo`` line swallows nothing
    rows = _rows("cube--1.2.sql", text, "signatures")
    assert rows[0] == "8 CREATE FUNCTION cube_in(cstring) RETURNS cube"  # no LANGUAGE, body or attributes
    assert "26 CREATE TYPE cube (INTERNALLENGTH = variable, INPUT = cube_in, OUTPUT = cube_out, ALIGNMENT = double)" in rows
    assert "131 CREATE FUNCTION cube_subset(cube, int4[]) RETURNS cube" in rows
    op = next(r for r in rows if r.startswith("214 "))
    assert op.startswith("214 CREATE OPERATOR < (LEFTARG = cube, RIGHTARG = cube, PROCEDURE = cube_lt,") and op.endswith("…")
    kinds = {s.kind for s in syms}
    assert kinds == {"function", "type", "operator", "operator_class"}
    assert "349 operator_class cube_ops" in _rows("cube--1.2.sql", text, "map")


def test_postgresql_views_list_the_columns_their_query_gives() -> None:
    text = _sql("system_views_head.sql")
    rows = _rows("system_views.sql", text, "signatures")
    assert rows[0] == (
        "17 CREATE VIEW pg_roles(rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, "
        "rolreplication, rolconnlimit, rolpassword, rolvaliduntil, rolbypassrls, rolconfig, oid) AS …")
    assert ("189 CREATE VIEW pg_stats(schemaname, tablename, attname, inherited, null_frac, avg_width, n_distinct, "
            "most_common_vals, most_common_freqs, histogram_bounds, correlation, most_common_elems, "
            "most_common_elem_freqs, elem_count_histogram) WITH (security_barrier) AS …") in rows
    assert "381 CREATE VIEW pg_locks(*) AS …" in rows  # ``SELECT *``: what the view has is the function's
    assert len(rows) == len(re.findall(r"(?m)^CREATE\b", text))


# ---------------------------------------------------------------------- other dialects (no real file here)
def test_mysql_dump_delimiter_and_escaped_quotes() -> None:
    text = (
        "DROP TABLE IF EXISTS `users`;\n"
        "CREATE TABLE `users` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n"
        "  `bio` text COMMENT 'it\\'s; here',\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB;\n"
        "INSERT INTO `users` VALUES (1,'O\\'Brien; CREATE TABLE x (y int);');\n"
        "# CREATE TABLE commented (x int);\n"
        "DELIMITER //\n"
        "CREATE PROCEDURE `add_user`(IN p_name VARCHAR(255))\nBEGIN\n  IF p_name IS NULL THEN\n"
        "    SET p_name = 'x';\n  END IF;\n  INSERT INTO users(bio) VALUES (p_name);\nEND //\n"
        "DELIMITER ;\n"
        "CREATE VIEW v AS SELECT id, bio AS about, COUNT(*) FROM users GROUP BY id;\n")
    syms = extract_symbols("dump.sql", text)
    assert [(s.kind, s.name, s.line, s.end_line) for s in syms] == [
        ("table", "users", 2, 6), ("procedure", "add_user", 10, 16), ("view", "v", 18, 18)]
    assert syms[0].signature == ("CREATE TABLE `users` (`id` int(11) NOT NULL AUTO_INCREMENT, `bio` text COMMENT "
                                 "'it\\'s; here', PRIMARY KEY (`id`)) ENGINE=InnoDB")
    assert syms[1].signature == "CREATE PROCEDURE `add_user`(IN p_name VARCHAR(255))"
    assert syms[2].signature == "CREATE VIEW v(id, about, ?) AS …"


def test_tsql_batches_without_semicolons() -> None:
    text = ("CREATE TABLE dbo.Orders (\n  OrderId INT IDENTITY(1,1) PRIMARY KEY,\n  Total DECIMAL(10, 2)\n)\nGO\n"
            "CREATE PROCEDURE dbo.GetOrders @Id INT, @Since DATE = NULL\nAS\nBEGIN\n  SET NOCOUNT ON;\n"
            "  SELECT * FROM dbo.Orders WHERE OrderId = @Id;\nEND\nGO\n")
    syms = extract_symbols("t.sql", text)
    assert [(s.name, s.line, s.end_line, s.signature) for s in syms] == [
        ("dbo.Orders", 1, 4, "CREATE TABLE dbo.Orders (OrderId INT IDENTITY(1,1) PRIMARY KEY, Total DECIMAL(10, 2))"),
        ("dbo.GetOrders", 6, 11, "CREATE PROCEDURE dbo.GetOrders @Id INT, @Since DATE = NULL"),
    ]


# ---------------------------------------------------------------------- Makefiles
def _make_variables(makefile: Path, cwd: Path) -> set[str]:
    """The variables GNU make says ``makefile`` defines (its database, ``make -p``)."""
    p = subprocess.run(["make", "-pRrq", "-f", str(makefile), "__outline_oracle__"], capture_output=True,
                       text=True, timeout=60, cwd=cwd, check=False)
    found = re.findall(r"# makefile \(from '" + re.escape(str(makefile)) + r"', line \d+\)\n"
                       r"(?:define |override |export |private )*([^\s:?+!=]+)", p.stdout)
    return set(found) - {"MAKEFILE_LIST"}


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make not installed")
@pytest.mark.parametrize("name", ["git-subtree/Makefile", "python3/python.mk", "pgxs/nls-global.mk"])
def test_every_variable_make_defines_has_a_row(name: str, tmp_path: Path) -> None:
    path = FIXTURES / "make" / name
    want = _make_variables(path, tmp_path)
    assert len(want) >= 8
    syms = extract_symbols("Makefile", path.read_text(), "make")
    assert want <= {s.name for s in syms if s.kind == "variable"}


_RULE_LINE = re.compile(r"^([A-Za-z][\w.-]*(?: [\w.-]+)*)::?(?!=)[^=\n]*$", re.MULTILINE)  # no variable


@pytest.mark.parametrize("name", ["git-subtree/Makefile", "pgxs/nls-global.mk", "pgxs/pgxs.mk"])
def test_every_rule_line_has_a_row(name: str) -> None:
    """A rule line written plainly (``clean:``, ``install: all installdirs``) is a target row at its
    line, also after lines the grammar misreads (``pgxs.mk`` loses most of its rules to them)."""
    text = (FIXTURES / "make" / name).read_text()
    want = {text.count("\n", 0, m.start()) + 1: m.group(1) for m in _RULE_LINE.finditer(text)}
    assert len(want) >= 8
    got = {s.line: s.name for s in extract_symbols("Makefile", text, "make") if s.kind == "target"}
    assert {line: got.get(line) for line in want} == want


def test_makefile_signatures_and_map() -> None:
    text = (FIXTURES / "make" / "git-subtree" / "Makefile").read_text()
    sig = _rows("Makefile", text, "signatures")
    for row in ("2 all::", "7 prefix ?= /usr/local", "13 ../../GIT-VERSION-FILE: FORCE",
                "35 ASCIIDOC_EXTRA += -I../../Documentation …",  # past MAX_VALUE characters, cut at a space
                "41 SHELL_PATH = /bin/sh",  # tab-indented in ``ifndef``: a make line, not a recipe
                "47 GIT_SUBTREE_SH := git-subtree.sh", "58 $(GIT_SUBTREE): $(GIT_SUBTREE_SH)",
                "72 install-doc: install-man install-html", "99 clean:", "103 .PHONY: FORCE"):
        assert row in sig
    assert not any("\t" in r or "$(INSTALL)" in r for r in sig)  # no recipe line
    mp = _rows("Makefile", text, "map")
    assert mp[0] == "deps: ../../config.mak.autogen, ../../config.mak, ../../GIT-VERSION-FILE"
    assert mp[1:3] == ["2 target all", "7 var prefix gitexecdir:8 mandir:9 man1dir:10 htmldir:11"]
    assert "68 target install" in mp and mp[-1] == "103 target .PHONY"
    assert extract_imports("make", "-include a.mk b.mk # both\nsinclude c.mk\n") == [(1, "a.mk"), (1, "b.mk"), (2, "c.mk")]


def test_makefile_lines_the_grammar_fails_on() -> None:
    text = (FIXTURES / "make" / "python3" / "python.mk").read_text()
    assert _rows("Makefile", text, "map") == [
        ("20 var py_sitename py_libdir:26 py_pkgname:31 py_builddir:34 py_sitename_sh:39 py_libdir_sh:41 "
        "py_builddir_sh:43 py_setup_install_args:46")]
    pgxs = (FIXTURES / "make" / "pgxs" / "nls-global.mk").read_text()
    sig = _rows("Makefile", pgxs, "signatures")
    assert "43 XGETTEXT += -ctranslator …" in sig  # the line tree-sitter reads as an archive member
    assert "93 po/$(CATALOG_NAME).pot: $(word 2, $(GETTEXT_FILES)) $(MAKEFILE_LIST)" in sig  # in a recipe's ifeq
    assert "177 .PHONY: all-po install-po installdirs-po uninstall-po clean-po init-po update-po" in sig
    assert not any(len(r) > 200 for r in sig)


def test_makefile_constructs() -> None:
    text = ("export PATH := /usr/bin\noverride CFLAGS += -O2 # opt\ndefine TEMPLATE\n$(1): ; @echo $$@\nendef\n"
            "foo.o: CFLAGS += -g\n$(OBJS): %.o: %.c | builddir\n\t$(CC) -c $<\nall: ; @echo done\n"
            "big: " + " ".join(f"o{i}.o" for i in range(14)) + "\nVERSION?=1.2\nVPATH = src\n")
    assert [(s.kind, s.name, s.signature) for s in extract_symbols("Makefile", text, "make")] == [
        ("variable", "PATH", "export PATH := /usr/bin"),
        ("variable", "CFLAGS", "override CFLAGS += -O2"),
        ("macro", "TEMPLATE", "define TEMPLATE"),
        ("variable", "CFLAGS", "foo.o: CFLAGS += -g"),
        ("target", "$(OBJS)", "$(OBJS): %.o: %.c | builddir"),
        ("target", "all", "all:"),
        ("target", "big", "big: o0.o o1.o o2.o o3.o o4.o o5.o o6.o o7.o o8.o o9.o … +4"),
        ("variable", "VERSION", "VERSION ?= 1.2"),
        ("variable", "VPATH", "VPATH = src"),
    ]


# ---------------------------------------------------------------------- real CLI
def test_cli_reads_sql_and_makefile_outlines(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "sql" / "events.sql", tmp_path / "events.sql")
    shutil.copy(FIXTURES / "make" / "git-subtree" / "Makefile", tmp_path / "Makefile")
    exe = Path(sys.executable).with_name("lean-ctx")
    env = {**os.environ, "LEAN_CTX_HOME": str(tmp_path / "home"), "LEAN_CTX_NO_DAEMON": "1"}
    out = {}
    for mode in ("signatures", "map"):
        p = subprocess.run([str(exe), "read", "--mode", mode, "events.sql", "Makefile"], capture_output=True,
                           text=True, timeout=120, cwd=tmp_path, env=env, check=False)
        assert p.returncode == 0, p.stderr
        out[mode] = p.stdout.splitlines()
    assert "32 CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events" in out["signatures"]
    assert "58 $(GIT_SUBTREE): $(GIT_SUBTREE_SH)" in out["signatures"]
    assert "45 table events_fts" in out["map"] and "96 target test" in out["map"]


@pytest.mark.parametrize("name", ["rules.mk", "build.mak", "Makefile", "GNUmakefile"])
def test_make_fragments_are_make_by_their_name(name: str) -> None:
    from leanctx.context.langs import detect_language

    assert detect_language(name, "all: x\n") == "make"
