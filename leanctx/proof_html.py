"""Context Proof as one self-contained HTML page: inline CSS, no script, no external asset,
readable in light and dark (``prefers-color-scheme``). Every text is escaped."""

from __future__ import annotations

from html import escape
from typing import Any

_CSS = """
:root { color-scheme: light dark; --bg:#ffffff; --fg:#1b1f24; --muted:#57606a; --line:#d0d7de;
  --card:#f6f8fa; --ok:#1a7f37; --bad:#cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#0d1117; --fg:#e6edf3; --muted:#9198a1; --line:#30363d; --card:#161b22; --ok:#3fb950;
    --bad:#f85149; }
}
* { box-sizing: border-box; }
body { margin: 0; padding: 2rem; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 980px; margin: 0 auto; }
h1 { font-size: 1.5rem; margin: 0 0 .25rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .25rem; }
.muted { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em;
  word-break: break-all; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem;
  margin: 1rem 0; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .35rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: var(--ok); font-weight: 600; }
.bad { color: var(--bad); font-weight: 600; }
"""


def _e(v: Any) -> str:
    return escape("" if v is None else str(v), quote=True)


def _table(headers: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"n" if i in numeric else ""}">{_e(c)}</td>' for i, c in enumerate(r)) + "</tr>"
        for r in rows
    ) or f'<tr><td colspan="{len(headers)}" class="muted">none</td></tr>'
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(doc: dict[str, Any]) -> str:
    head = doc.get("head", {})
    chain = doc.get("chain", {})
    signer = doc.get("signer", {})
    events = doc.get("events", {})
    chain_txt = (
        '<span class="ok">intact</span>' if chain.get("ok")
        else f'<span class="bad">broken at position {_e(chain.get("first_broken"))}: {_e(chain.get("reason"))}</span>'
    )
    kinds = _table(["kind", "events"], [[k, n] for k, n in events.get("by_kind", {}).items()], {1})
    projs = _table(["projection", "version", "digest (sha256)"],
                   [[p.get("name"), p.get("version"), p.get("digest")] for p in doc.get("projections", [])], {1})
    agent_rows = []
    for a, v in doc.get("agents", {}).items():
        s = v.get("savings") or {}
        agent_rows.append([a, v.get("tool_calls"), v.get("tool_errors"), v.get("budget_tokens"), s.get("calls", 0),
                           s.get("raw_tokens", 0), s.get("sent_tokens", 0), s.get("saved_tokens", 0),
                           "" if s.get("savings_pct") is None else f"{s['savings_pct']}%"])
    agents = _table(["agent", "tool calls", "errors", "budget tokens", "context calls", "raw", "sent", "saved",
                     "saved %"], agent_rows, {1, 2, 3, 4, 5, 6, 7, 8})
    t = doc.get("savings_totals", {})
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Context Proof · head {_e(head.get("position"))}</title>
<style>{_CSS}</style>
</head>
<body>
<main>
<h1>Context Proof v{_e(doc.get("version"))}</h1>
<p class="muted">{_e(doc.get("project_root"))} · generated {_e(doc.get("generated_at"))}</p>
<div class="card"><dl>
<dt>head position</dt><dd class="mono">{_e(head.get("position"))}</dd>
<dt>head hash</dt><dd class="mono">{_e(head.get("hash"))}</dd>
<dt>hash chain</dt><dd>{chain_txt} <span class="muted">({_e(chain.get("checked"))} events checked)</span></dd>
<dt>events</dt><dd>{_e(events.get("total"))}</dd>
<dt>database</dt><dd class="mono">{_e(doc.get("db_path"))}</dd>
</dl></div>
<h2>Per agent: tool calls, tokens and savings</h2>
{agents}
<p class="muted">All agents: {_e(t.get("calls"))} context calls, {_e(t.get("raw_tokens"))} raw tokens,
{_e(t.get("sent_tokens"))} sent, {_e(t.get("saved_tokens"))} saved.</p>
<h2>Events by kind</h2>
{kinds}
<h2>Projections</h2>
{projs}
<h2>Signature</h2>
<div class="card"><dl>
<dt>algorithm</dt><dd>{_e(signer.get("alg"))}</dd>
<dt>key</dt><dd class="mono">{_e(signer.get("key_id"))}</dd>
<dt>fingerprint</dt><dd class="mono">{_e(signer.get("fingerprint"))}</dd>
<dt>public key</dt><dd class="mono">{_e(signer.get("public_key"))}</dd>
<dt>signature</dt><dd class="mono">{_e(doc.get("signature"))}</dd>
</dl></div>
<p class="muted">This page is a rendering. Check the JSON file with
<code>lean-ctx proof verify FILE</code>: it checks the signature against trusted keys and re-derives every
figure by replaying the log.</p>
</main>
</body>
</html>
"""
