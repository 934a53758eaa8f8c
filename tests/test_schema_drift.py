"""schema/ is generated from the code; these fail when someone changes one without the other."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from leanctx import schema_gen
from leanctx.events.kinds import registry


def test_schema_dir_matches_the_code() -> None:
    stale = schema_gen.drift()
    assert stale == [], f"schema/ drifted from the code: {stale}; run `lean-ctx schema`"


def test_every_kind_has_a_schema_with_its_tag_and_version() -> None:
    for kind, cls in registry().items():
        doc = json.loads((schema_gen.SCHEMA_DIR / "json" / f"{kind}.json").read_text())
        assert doc["x-schema-version"] == cls.schema_version
        assert kind in json.dumps(doc), f"{kind}: the tag is missing from its schema"


def test_drift_is_detected(tmp_path: Path) -> None:
    schema_gen.write(tmp_path)
    assert schema_gen.drift(tmp_path) == []
    target = tmp_path / "json" / "agent.registered.json"
    doc = json.loads(target.read_text())
    doc["x-schema-version"] = 99
    target.write_text(json.dumps(doc))
    (tmp_path / "json" / "ghost.kind.json").write_text("{}")
    assert schema_gen.drift(tmp_path) == ["json/agent.registered.json", "json/ghost.kind.json"]


def test_catalog_names_emitters_and_folders() -> None:
    text = schema_gen.catalog()
    line = next(l for l in text.splitlines() if l.startswith("| `agent.registered`"))
    assert "`agent.register`" in line and "`agents`" in line


@pytest.mark.parametrize("kind", sorted(registry()))
def test_schemas_validate_real_payloads(kind: str) -> None:
    cls = registry()[kind]
    # every kind's schema lists the fields its Struct encodes
    doc = json.loads((schema_gen.SCHEMA_DIR / "json" / f"{kind}.json").read_text())
    defs = doc.get("$defs", {})
    props = next(iter(defs.values()))["properties"] if defs else doc["properties"]
    assert set(props) == {"kind", *cls.__struct_encode_fields__}
    assert msgspec.json.schema(cls)  # generation itself works


def test_projections_sql_runs_in_sqlite() -> None:
    """The generated DDL is SQL a reader can run: every table and index of every projection comes
    out of it (a DDL's `--` comment must not swallow the rest of its statement)."""
    import apsw

    from leanctx.projections import default_projections

    conn = apsw.Connection(":memory:")
    conn.execute(schema_gen.projections_sql())
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}
    for p in default_projections():
        for table in p.tables:
            assert table in names, (p.name, table)
