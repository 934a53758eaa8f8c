"""``lean-ctx keys list|show|trust|export-pub``: Ed25519 keys under the data dir."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .app import state
from .common import JSON
from .render import emit_json, table

if TYPE_CHECKING:
    from ...keys import KeyInfo

keys_app = typer.Typer(help="Ed25519 keys: the project key, agent keys, the trust store.", no_args_is_help=True)


def _key(ctx: typer.Context, key_id: str | None) -> KeyInfo:
    """The key ``key_id`` (default: this project's). Only the project key is created on first
    use; any other id that is neither held here nor trusted is ``KEY_NOT_FOUND`` (agents' keys are
    made when they register)."""
    from ... import keys

    project = keys.project_key_id(state(ctx).project_root())
    kid = key_id or project
    return keys.info(kid, create=kid == project)


@keys_app.command("list")
def list_cmd(ctx: typer.Context, json_: bool = JSON) -> None:
    """Keys held here (with their private half) and keys trusted with `keys trust`."""
    from ... import keys

    rows = [*keys.local_keys(), *keys.trusted_keys()]
    if state(ctx).want_json(json_):
        emit_json(rows)
        return
    out = [{"key": k.key_id, "fingerprint": k.fingerprint, "kind": "own" if k.private else "trusted", "path": k.path}
           for k in rows]
    sys.stdout.write((table(out, ["key", "fingerprint", "kind", "path"]) if out else "no keys yet") + "\n")


@keys_app.command("show")
def show_cmd(
    ctx: typer.Context,
    key_id: str | None = typer.Argument(None, help="Key id (default: this project's key, created on first use)."),
    json_: bool = JSON,
) -> None:
    """One key: id, fingerprint, public key, file (a key held here, or a trusted one)."""
    k = _key(ctx, key_id)
    if state(ctx).want_json(json_):
        emit_json(k)
        return
    sys.stdout.write(f"key          {k.key_id}\nfingerprint  {k.fingerprint}\npublic key   {k.public_key}\n"
                     f"file         {k.path}\n")


@keys_app.command("trust")
def trust_cmd(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="A .pub file ('ed25519 <base64> <key id>', as `keys export-pub` writes)."),
    json_: bool = JSON,
) -> None:
    """Add a public key to the trust store."""
    from ... import keys
    from ...errors import InvalidInput

    try:
        text = Path(file).read_text()
    except (OSError, UnicodeError) as exc:
        raise InvalidInput(keys.KEY_INVALID_FILE, f"cannot read {file}: {exc}") from exc
    k = keys.trust(text, file)
    if state(ctx).want_json(json_):
        emit_json(k)
        return
    sys.stdout.write(f"trusted {k.key_id} {k.fingerprint}\n")


@keys_app.command("export-pub")
def export_pub_cmd(
    ctx: typer.Context,
    key_id: str | None = typer.Argument(None, help="Key id (default: this project's key)."),
    out: str | None = typer.Option(None, "--out", help="Write to this file instead of stdout."),
) -> None:
    """Print (or write) a key's public half, for another machine's `keys trust`.

    --out that cannot be written: KEY_OUT_UNWRITABLE / KEY_OUT_IS_A_DIRECTORY."""
    from ... import keys
    from . import out_file

    k = _key(ctx, key_id)
    line = keys.pub_line(keys.unb64(k.public_key), k.key_id)
    if out:
        out_file.write(out, line.encode("ascii"), "KEY", "the public key")
    else:
        sys.stdout.write(line)


def attach(app: typer.Typer) -> None:
    app.add_typer(keys_app, name="keys")
