"""The scent field: the latest mark each agent left of each kind on each target.

One row per (project, target, kind, agent) holding the latest deposit's intensity ``I0`` and
timestamp; a new deposit of the same kind by the same agent replaces it (a refresh: the age
restarts). A release, or a DONE deposit by the claimer, removes that agent's CLAIMED row. A
release carrying ``claim_project`` removes the row of that project (a departure releases an
agent's claims wherever they were made), else the row of the event's project.

Decay is computed at query time, never stored: ``I(t) = I0 · 0.5^(age / half_life)`` with
``age = now − ts`` (clamped at 0) and a per-kind half-life (``DEFAULT_HALF_LIVES``, overridable
per call with ``half_lives=``; the environment overrides ``LEAN_CTX_SCENT_HALF_LIFE_<KIND>``
are read by the command/CLI layer and passed in, never here).

**Active claim.** A CLAIMED row is *active* — it makes ``scent.claim`` refuse other agents —
while it is not released and its intensity is still at least ``active_fraction`` (default
``CLAIM_ACTIVE_FRACTION`` = 0.5) of its own deposit. The threshold is relative to the
deposit, so a claim's intensity does not change how long it holds: with 0.5 a claim is active
for exactly one half-life after its latest (re)claim, boundary included (``age ≤ half_life``;
CLAIMED defaults to 600 s) — and while its holder has not gone. An inactive claim stays in the
field, fading, until it drops below the floor, and anyone may take the target.

**Departed holders.** The holder's status comes from the agents projection at the same ``now``
(``leanctx.projections.agents.status_of``; ``holder_status`` on every view): a holder that is
``stale`` — no heartbeat for more than ``HEARTBEAT_TTL`` (60 s: three missed 20 s heartbeats),
whether or not its ``agent.left`` has been recorded yet — or ``left`` (deregistered) holds
nothing: its claim is inactive whatever its age. ``active`` and ``idle`` holders (idle: one
heartbeat late, still within the TTL) keep the window. An actor that never registered
(``unregistered``, e.g. a bare CLI identity) has no heartbeat to judge, so only the window
applies to it. Departures also release claims by events (``leanctx.commands.scent``); this
query-time rule covers the time between an agent going stale and someone recording it, and
logs written before departures released claims.

Targets are stored normalized (``normalize_target``): a file path relative to the project
root (``./src//a.py`` → ``src/a.py``), or a task id, which normalization leaves as it is.
"""

from __future__ import annotations

import math
import posixpath
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from .. import clock
from ..errors import InvalidInput
from ..events import StoredEvent
from ..events.kinds.scent import ScentDeposited, ScentReleased
from .agents import HEARTBEAT_TTL, find_agent
from .base import Projection

SCENT_KINDS: tuple[str, ...] = ("CLAIMED", "DONE", "STUCK", "HOT", "AVOID")
DEFAULT_HALF_LIVES: dict[str, float] = {
    "CLAIMED": 600.0,
    "HOT": 600.0,
    "STUCK": 1800.0,
    "DONE": 3600.0,
    "AVOID": 3600.0,
}
CLAIM_ACTIVE_FRACTION = 0.5  # a claim is active while I(t) >= 0.5 · I0, i.e. for one half-life
FIELD_FLOOR = 0.05  # sync drops marks whose current intensity fell below this
MAX_TARGET_CHARS = 512
DEPARTED = frozenset({"stale", "left"})  # holder statuses whose claims hold nothing
UNREGISTERED = "unregistered"  # the holder status of an actor with no registration


class ScentView(msgspec.Struct, frozen=True):
    """One live mark of the field, with its intensity decayed to ``now``."""

    target: str
    kind: str
    agent: str  # the depositor's actor id
    name: str  # its registered agent name, else the actor id
    intensity: float  # current, rounded to 6 decimals
    age_seconds: float
    deposited_at: str
    deposit_intensity: float
    half_life_seconds: float
    deposits: int
    active: bool  # CLAIMED only: the claim still excludes other agents
    project: str = ""
    holder_status: str = UNREGISTERED  # the depositor in the registry: active | idle | stale | left | unregistered


class ClaimView(msgspec.Struct, frozen=True):
    """An unreleased claim on a target."""

    target: str
    agent: str
    name: str
    age_seconds: float
    intensity: float
    deposited_at: str
    claimed_since: str
    active: bool
    active_for_seconds: float  # time left before it stops excluding others (0 when inactive)
    project: str = ""
    holder_status: str = UNREGISTERED  # the claimer in the registry: active | idle | stale | left | unregistered

    @property
    def departed(self) -> bool:
        """The holder is stale or left (so the claim holds nothing)."""
        return self.holder_status in DEPARTED

    @property
    def text(self) -> str:
        """``claimed by cursor-dev-1, 4m ago`` (for ``[scent: ...]`` notes)."""
        return f"claimed by {self.name}, {format_age(self.age_seconds)} ago"


class ScentField(Projection):
    name = "scent"
    version = 1
    kinds = frozenset({"scent.deposited", "scent.released"})
    tables = {
        "scent_marks": """CREATE TABLE IF NOT EXISTS scent_marks (
            project      TEXT NOT NULL,
            target       TEXT NOT NULL,
            kind         TEXT NOT NULL,
            agent        TEXT NOT NULL,
            intensity    REAL NOT NULL,
            deposited_at TEXT NOT NULL,
            first_at     TEXT NOT NULL,
            deposits     INTEGER NOT NULL,
            position     INTEGER NOT NULL,
            PRIMARY KEY (project, target, kind, agent)
        )""",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS scent_marks_kind ON scent_marks (project, kind, target)",)

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        project = event.project or ""
        if isinstance(ev, ScentDeposited):
            conn.execute(
                "INSERT INTO scent_marks (project, target, kind, agent, intensity, deposited_at, first_at, deposits,"
                " position) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)"
                " ON CONFLICT(project, target, kind, agent) DO UPDATE SET intensity = excluded.intensity,"
                " deposited_at = excluded.deposited_at, deposits = deposits + 1, position = excluded.position",
                (project, ev.target, ev.scent, ev.agent, float(ev.intensity), event.ts, event.ts, event.position),
            )
            if ev.scent == "DONE":
                _drop_claim(conn, project, ev.target, ev.agent)
        elif isinstance(ev, ScentReleased):
            _drop_claim(conn, project if ev.claim_project is None else ev.claim_project, ev.target, ev.agent)


def _drop_claim(conn: Any, project: str, target: str, agent: str) -> None:
    conn.execute(
        "DELETE FROM scent_marks WHERE project = ? AND target = ? AND kind = 'CLAIMED' AND agent = ?",
        (project, target, agent),
    )


# --- pure helpers ----------------------------------------------------------------------


def normalize_target(target: str, project_root: str | None = None) -> str:
    """A target as stored: stripped, checked, and if it is a path, normalized lexically
    (``./src//a.py`` → ``src/a.py``; an absolute path inside ``project_root`` becomes relative
    to it). Task ids (``t1``, ``task:general/t1``) come back unchanged. Raises
    ``InvalidInput(SCENT_INVALID_TARGET)`` for an empty target, a control character or more
    than 512 characters."""
    if not isinstance(target, str):
        raise InvalidInput("SCENT_INVALID_TARGET", "a scent target must be a string (a file path or a task id)")
    t = target.strip()
    if not t:
        raise InvalidInput(
            "SCENT_INVALID_TARGET", "a scent target is required: a file path relative to the project root, or a task id"
        )
    if len(t) > MAX_TARGET_CHARS:
        raise InvalidInput(
            "SCENT_INVALID_TARGET", f"the scent target is {len(t)} characters long; use at most {MAX_TARGET_CHARS}"
        )
    for ch in t:
        if unicodedata.category(ch) == "Cc" or ch in "\u2028\u2029":
            raise InvalidInput(
                "SCENT_INVALID_TARGET",
                f"the scent target {t[:60]!r} contains a control character (U+{ord(ch):04X}); remove it",
            )
    p = posixpath.normpath(t)
    if p.startswith("//"):  # POSIX keeps a leading '//'; lean-ctx does not
        p = "/" + p.lstrip("/")
    if p.startswith("/") and project_root:
        root = posixpath.normpath(project_root)
        if p == root:
            return "."
        if root == "/" or p.startswith(root.rstrip("/") + "/"):
            p = posixpath.relpath(p, root)
    return p


def resolve_half_lives(half_lives: Mapping[str, float] | None = None) -> dict[str, float]:
    """``DEFAULT_HALF_LIVES`` with ``half_lives`` (kind → seconds) laid over them."""
    out = dict(DEFAULT_HALF_LIVES)
    for kind, value in (half_lives or {}).items():
        k = kind.upper()
        if k not in out:
            raise InvalidInput("SCENT_INVALID_KIND", f"no scent kind {kind!r}; use one of {', '.join(SCENT_KINDS)}")
        v = float(value)
        if not (math.isfinite(v) and v > 0):
            raise InvalidInput("SCENT_INVALID_HALF_LIFE", f"the half-life of {k} must be a positive number of seconds")
        out[k] = v
    return out


def decay(intensity: float, age: float, half_life: float) -> float:
    """``I0 · 0.5^(age / half_life)`` (age clamped at 0)."""
    return intensity * 0.5 ** (max(0.0, age) / half_life)


def claim_window(half_life: float, active_fraction: float = CLAIM_ACTIVE_FRACTION) -> float:
    """How long after a (re)claim it stays active: ``half_life · log2(1 / active_fraction)``
    (one half-life with the default 0.5)."""
    if not (0.0 < active_fraction <= 1.0):
        raise InvalidInput("SCENT_INVALID_THRESHOLD", "the active-claim fraction must be in (0, 1]")
    return half_life * math.log2(1.0 / active_fraction)


def format_age(seconds: float) -> str:
    """``45s``, ``2m``, ``3h``, ``2d`` (rounded down)."""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h"
    return f"{s // 86400}d"


def _holder(conn: Any, actor: str, now: float, cache: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(registered name, registry status) of ``actor`` at ``now``; (actor, "unregistered") when
    it never registered under that id."""
    if actor not in cache:
        agent = find_agent(conn, actor, now=now, ttl=HEARTBEAT_TTL)
        if agent is not None and agent.agent_id == actor:
            cache[actor] = (agent.name, agent.status)
        else:
            cache[actor] = (actor, UNREGISTERED)
    return cache[actor]


# --- queries -----------------------------------------------------------------------------

_COLS = "project, target, kind, agent, intensity, deposited_at, first_at, deposits"


def sync(
    conn: Any,
    *,
    now: float,
    project: str | None = None,
    kinds: Iterable[str] | None = None,
    target: str | None = None,
    floor: float = FIELD_FLOOR,
    half_lives: Mapping[str, float] | None = None,
    active_fraction: float = CLAIM_ACTIVE_FRACTION,
) -> list[ScentView]:
    """The live field: every mark whose current intensity is at least ``floor``, strongest
    first; ties by target, kind, agent, project. ``project`` None means every project in the
    log ("" is the key of events dispatched without one); ``target`` must be normalized."""
    hl = resolve_half_lives(half_lives)
    sql = f"SELECT {_COLS} FROM scent_marks"
    where: list[str] = []
    params: list[Any] = []
    if project is not None:
        where.append("project = ?")
        params.append(project)
    if target is not None:
        where.append("target = ?")
        params.append(target)
    if kinds is not None:
        ks = sorted({k.upper() for k in kinds})
        for k in ks:
            if k not in DEFAULT_HALF_LIVES:
                raise InvalidInput("SCENT_INVALID_KIND", f"no scent kind {k!r}; use one of {', '.join(SCENT_KINDS)}")
        where.append(f"kind IN ({','.join('?' * len(ks))})")
        params.extend(ks)
    if where:
        sql += " WHERE " + " AND ".join(where)
    holders: dict[str, tuple[str, str]] = {}
    out: list[ScentView] = []
    for proj, tgt, kind, agent, i0, deposited_at, _first, deposits in conn.execute(sql, params):
        age = max(0.0, now - clock.parse(deposited_at))
        h = hl.get(kind, DEFAULT_HALF_LIVES["HOT"])
        current = round(decay(i0, age, h), 6)
        if current < floor:
            continue
        name, status = _holder(conn, agent, now, holders)
        active = kind == "CLAIMED" and age <= claim_window(h, active_fraction) and status not in DEPARTED
        out.append(ScentView(tgt, kind, agent, name, current, round(age, 3), deposited_at, i0, h, deposits, active,
                             proj, status))
    out.sort(key=lambda v: (-v.intensity, v.target, v.kind, v.agent, v.project))
    return out


def claims_on(
    conn: Any,
    target: str,
    *,
    now: float,
    project: str | None = None,
    half_lives: Mapping[str, float] | None = None,
    active_fraction: float = CLAIM_ACTIVE_FRACTION,
) -> list[ClaimView]:
    """Every unreleased claim on ``target`` (normalized), active or not (an inactive one has
    lapsed, or its holder is stale or left: ``holder_status``), newest first."""
    h = resolve_half_lives(half_lives)["CLAIMED"]
    window = claim_window(h, active_fraction)
    sql = f"SELECT {_COLS} FROM scent_marks WHERE target = ? AND kind = 'CLAIMED'"
    params: list[Any] = [target]
    if project is not None:
        sql += " AND project = ?"
        params.append(project)
    sql += " ORDER BY deposited_at DESC, agent, project"
    holders: dict[str, tuple[str, str]] = {}
    out = []
    for proj, tgt, _kind, agent, i0, deposited_at, first_at, _n in conn.execute(sql, params):
        age = max(0.0, now - clock.parse(deposited_at))
        name, status = _holder(conn, agent, now, holders)
        active = age <= window and status not in DEPARTED
        out.append(ClaimView(tgt, agent, name, round(age, 3), round(decay(i0, age, h), 6), deposited_at, first_at,
                             active, round(window - age, 3) if active else 0.0, proj, status))
    return out


def claims_of(conn: Any, agent: str) -> list[tuple[str, str]]:
    """(project, target) of every unreleased claim ``agent`` holds, in any project, active or
    not (what its departure releases), ordered by project and target."""
    rows = conn.execute(
        "SELECT project, target FROM scent_marks WHERE kind = 'CLAIMED' AND agent = ? ORDER BY project, target",
        (agent,),
    )
    return [(str(p), str(t)) for p, t in rows]


def scent_for(
    conn: Any,
    target: str,
    *,
    now: float,
    project: str | None = None,
    half_lives: Mapping[str, float] | None = None,
    active_fraction: float = CLAIM_ACTIVE_FRACTION,
) -> ClaimView | None:
    """The active claim on ``target`` (the newest if, unusually, there are several), or None.

    ``target`` is normalized here (relative to ``project`` when it is an absolute path); an
    invalid target has no claim (None) rather than an error, so a file read never fails on
    it. ``ClaimView.text`` renders ``claimed by cursor-dev-1, 4m ago``."""
    try:
        t = normalize_target(target, project)
    except InvalidInput:
        return None
    for c in claims_on(conn, t, now=now, project=project, half_lives=half_lives, active_fraction=active_fraction):
        if c.active:
            return c
    return None
