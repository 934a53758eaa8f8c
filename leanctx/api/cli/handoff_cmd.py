"""``lean-ctx handoff create|import|list|show`` (signed handoff bundles) and ``lean-ctx pack
seal|send|receive`` (TransportEnvelopeV1 over HTTP, authenticated with a shared secret)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .app import state
from .common import JSON, dispatch
from .render import emit_json

handoff_app = typer.Typer(help="Hand work to another agent: signed bundles (create, import, list, show).",
                          no_args_is_help=True)
pack_app = typer.Typer(help="Agent-to-agent transport: seal, send and receive envelopes (HMAC-SHA256).",
                       no_args_is_help=True)


def attach(app: typer.Typer) -> None:
    app.add_typer(handoff_app, name="handoff")
    app.add_typer(pack_app, name="pack")


def _read(file: str, code: str) -> bytes:
    from ...errors import InvalidInput

    try:
        return sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise InvalidInput(code, f"cannot read {file}: {exc}") from None


def _text(data: bytes, code: str, what: str) -> str:
    from ...errors import InvalidInput

    try:
        return data.decode("utf-8")
    except UnicodeError:
        raise InvalidInput(code, f"the {what} is not UTF-8 text") from None


@handoff_app.command("create")
def create_cmd(
    ctx: typer.Context,
    out: str | None = typer.Option(None, "--out", "-o", help="Write the bundle here (default: stdout)."),
    knowledge: str = typer.Option("all", "--knowledge", help="Knowledge to include: all, none or a category."),
    message: str | None = typer.Option(None, "--message", "-m", help="A note for the receiving agent."),
    diary_limit: int = typer.Option(50, "--diary-limit", help="Newest diary entries to include."),
    json_: bool = JSON,
) -> None:
    """Bundle your session, knowledge, open tasks, file refs and diary, signed with your key.

    --out is checked before the handoff is recorded (missing folders are created, as ctx_handoff
    out= does): HANDOFF_OUT_UNWRITABLE / HANDOFF_OUT_IS_A_DIRECTORY, and nothing is recorded."""
    from ...commands.handoff import CreateHandoff
    from ..tools.handoff import created_text
    from . import out_file

    st = state(ctx)
    if out:
        out_file.prepare(out, "HANDOFF", "the handoff bundle")
    v = dispatch(st, CreateHandoff(knowledge=knowledge, diary_limit=diary_limit, message=message))
    if out:
        out_file.write(out, v.bundle.encode("utf-8"), "HANDOFF", "the handoff bundle",
                       failed_after=f" (handoff {v.handoff_id} was recorded; run `lean-ctx handoff create` again)")
    if st.want_json(json_):
        emit_json({k: getattr(v, k) for k in ("handoff_id", "sender", "session_id", "fingerprint", "digest", "counts")}
                  | {"out": out} | ({} if out else {"bundle": v.bundle}))
        return
    if out:
        sys.stdout.write(created_text(v, out) + "\n")
    else:
        sys.stderr.write(created_text(v) + "\n")
        sys.stdout.write(v.bundle)


def _import(st, text: str, *, knowledge: bool, session: bool, workflow: bool, via: str, json_: bool,  # type: ignore[no-untyped-def]
            lease: float | None = None) -> None:
    from ...commands.handoff import ImportHandoff
    from ..tools.handoff import imported_text

    v = dispatch(st, ImportHandoff(bundle=text, apply_knowledge=knowledge, apply_session=session,
                                   apply_workflow=workflow, via=via, lease_seconds=lease))
    if st.want_json(json_):
        emit_json(v)
    else:
        sys.stdout.write(imported_text(v) + "\n")


@handoff_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="The bundle file ('-' reads stdin; recorded as via stdin)."),
    apply_knowledge: bool = typer.Option(False, "--apply-knowledge", help="Remember the bundle's facts."),
    apply_session: bool = typer.Option(False, "--apply-session", help="Take over the task, findings, decisions."),
    apply_workflow: bool = typer.Option(
        False, "--apply-workflow",
        help="Take over the sender's tasks that it still owns here: you become the owner, with a fresh lease on "
        "those in progress (task.handed_over). Finished tasks and tasks of other agents are left alone, "
        "with the reason."),
    apply_all: bool = typer.Option(False, "--apply", help="All three."),
    lease: float | None = typer.Option(None, "--lease", help="Seconds of the lease on taken-over tasks in "
                                          "progress (default 900)."),
    json_: bool = JSON,
) -> None:
    """Verify a bundle against the trust store, then apply what is asked (nothing by default)."""
    text = _text(_read(file, "HANDOFF_INVALID"), "HANDOFF_INVALID", "bundle")
    _import(state(ctx), text, knowledge=apply_knowledge or apply_all, session=apply_session or apply_all,
            workflow=apply_workflow or apply_all, via="stdin" if file == "-" else "file", json_=json_, lease=lease)


@handoff_app.command("list")
def list_cmd(ctx: typer.Context, json_: bool = JSON) -> None:
    """Handoffs created and imported in this log."""
    from ..tools.handoff import list_handoffs

    st = state(ctx)
    d = list_handoffs(st.open())
    if st.want_json(json_):
        emit_json({"created": d["created"], "imported": d["imported"]})
    else:
        sys.stdout.write(d["text"] + "\n")


@handoff_app.command("show")
def show_cmd(ctx: typer.Context, handoff_id: str = typer.Argument(...), json_: bool = JSON) -> None:
    """One handoff: who created it, who imported it, what was applied."""
    from ..tools.handoff import show_handoff

    st = state(ctx)
    d = show_handoff(st.open(), handoff_id)
    if st.want_json(json_):
        emit_json({"created": d["created"], "imports": d["imports"]})
    else:
        sys.stdout.write(d["text"] + "\n")


# --- pack: envelopes ------------------------------------------------------------------------

def _seal(file: str, secret: str, kind: str | None) -> bytes:
    import msgspec

    from ... import clock
    from ... import envelope as env
    from ... import handoff_bundle as hb
    from ...errors import InvalidInput
    from ...identity import agent_identity

    data = _read(file, env.ENVELOPE_INVALID)
    try:
        payload = msgspec.json.decode(data)
    except msgspec.DecodeError:
        raise InvalidInput(env.ENVELOPE_INVALID, f"{file} is not JSON (a handoff bundle or a context package)") from None
    if kind is None:
        kind = "handoff" if isinstance(payload, dict) and payload.get("format") == hb.FORMAT else "context"
    if kind == "handoff":
        hb.parse(data)  # refuse to send a bundle that was already edited
    return env.seal(payload, sender=agent_identity(), created_at=clock.iso(clock.now()), payload_kind=kind,
                    secret=secret)


@pack_app.command("seal")
def seal_cmd(
    file: str = typer.Argument(..., help="A handoff bundle or any JSON context package."),
    secret: str = typer.Option(..., "--secret", envvar="LEAN_CTX_A2A_SECRET", help="The shared secret."),
    out: str | None = typer.Option(None, "--out", "-o", help="Write the envelope here (default: stdout)."),
    kind: str | None = typer.Option(None, "--kind", help="handoff | context (default: detected)."),
) -> None:
    """Wrap a file in a TransportEnvelopeV1 (HMAC-SHA256 with the secret), without sending it.

    -o that cannot be written: PACK_OUT_UNWRITABLE / PACK_OUT_IS_A_DIRECTORY."""
    from . import out_file

    data = _seal(file, secret, kind)
    if out:
        out_file.write(out, data, "PACK", "the envelope")
    else:
        sys.stdout.write(data.decode())


@pack_app.command("send")
def send_cmd(
    ctx: typer.Context,
    file: str = typer.Argument(..., help="A handoff bundle or any JSON context package."),
    target: str = typer.Option(..., "--target", help="The receiving server, e.g. http://127.0.0.1:8787."),
    secret: str = typer.Option(..., "--secret", envvar="LEAN_CTX_A2A_SECRET", help="The shared secret."),
    kind: str | None = typer.Option(None, "--kind", help="handoff | context (default: detected)."),
    token: str | None = typer.Option(None, "--token", envvar="LEAN_CTX_REMOTE_AGENT_TOKEN",
                                        help="The receiving agent's X-Agent-Token (needed to --apply there)."),
    apply: bool = typer.Option(False, "--apply", help="Ask the receiver to apply the handoff (needs --token)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds."),
    json_: bool = JSON,
) -> None:
    """Seal FILE and POST the envelope to TARGET/v1/a2a/handoff."""
    import json
    import urllib.error
    import urllib.request

    from ...errors import CommandError

    data = _seal(file, secret, kind)
    from urllib.parse import urlsplit

    if urlsplit(target).scheme not in ("http", "https") or not urlsplit(target).netloc:
        from ...errors import InvalidInput

        raise InvalidInput("PACK_INVALID_TARGET", f"--target {target!r} is not an http(s) URL of a lean-ctx serve "
                           "(e.g. http://127.0.0.1:3344)")
    url = target.rstrip("/") + "/v1/a2a/handoff" + ("?apply=1" if apply else "")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["X-Agent-Token"] = token
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            err = json.loads(raw).get("error") or {}
        except ValueError:
            err = {}
        detail = err.get("message") or repr(raw[:200])
        raise CommandError(err.get("code", "PACK_SEND_REFUSED"),
                           f"{url} refused the envelope (HTTP {exc.code}): {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise CommandError("PACK_SEND_FAILED", f"cannot reach {url}: {exc}") from None
    if state(ctx).want_json(json_):
        sys.stdout.write(body.decode() + "\n")
    else:
        try:
            sys.stdout.write(json.loads(body).get("text", body.decode()) + "\n")
        except ValueError:
            sys.stdout.write(body.decode() + "\n")


@pack_app.command("receive")
def receive_cmd(
    ctx: typer.Context,
    envelope: str = typer.Argument(..., help="The envelope file ('-' reads stdin)."),
    secret: str = typer.Option(..., "--secret", envvar="LEAN_CTX_A2A_SECRET", help="The shared secret."),
    apply: bool = typer.Option(False, "--apply", help="Apply a handoff (session, knowledge, workflow: the "
                               "sender's tasks it still owns here become yours)."),
    out: str | None = typer.Option(None, "--out", "-o", help="Also write the payload here."),
    json_: bool = JSON,
) -> None:
    """Check the envelope's MAC, then import the handoff it carries (or write the package out)."""
    from ... import envelope as env
    from ... import handoff_bundle as hb
    from ...errors import InvalidInput

    e = env.open_envelope(_read(envelope, env.ENVELOPE_INVALID), secret)
    payload = hb.encode(e.payload) if isinstance(e.payload, dict) else None
    if out:
        from ... import keys
        from . import out_file

        out_file.write(out, payload if payload is not None else keys.canonical(e.payload) + b"\n", "PACK",
                       "the payload")
    st = state(ctx)
    if e.payload_kind != "handoff":
        if apply:
            raise InvalidInput("ENVELOPE_NOT_APPLICABLE", f"a {e.payload_kind} package has nothing to apply")
        if st.want_json(json_):
            emit_json({"sender": e.sender, "payload_kind": e.payload_kind, "payload": e.payload})
        else:
            sys.stdout.write(f"{e.payload_kind} package from {e.sender} ({e.created_at}), MAC ok\n")
        return
    if payload is None:
        raise InvalidInput(hb.HANDOFF_INVALID, "the envelope's handoff payload is not a bundle object")
    _import(st, payload.decode(), knowledge=apply, session=apply, workflow=apply, via="envelope", json_=json_)
