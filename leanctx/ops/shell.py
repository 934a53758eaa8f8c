"""ctx_shell, compress and ctx_expand: run a command, compress its output, record it.

``run_shell`` does the effectful part outside any write transaction: it checks the agent's
token budget (read-only; an exhausted budget is refused through ``shell.check`` so that the
refusal is recorded), runs the process (argv list, or a string through ``bash -c``) in its
own session with ``cwd``, a timeout (the whole process group is killed; exit code 124) and
the caller's environment plus ``env_passthrough``, captures stdout and stderr, **redacts
secrets first**, compresses with the pure engine (``leanctx.context.shell``), archives the
full redacted output next to the log whenever a line was omitted, puts the archive id into
every omission marker, and then dispatches ``shell.record``, which appends the events and
spends the tokens sent from the agent's budget.

Secrets: the output, the command line (string or argv, as recorded in ``shell.ran`` and
returned as ``command``) and anything derived from them pass through ``context.secrets.redact``
before anything is appended, archived or sent; a secret the output printed is also scrubbed
from the command line, and so is the value of an ``env_passthrough`` variable whose name says
it is secret (``DB_PASSWORD=...``) wherever the command prints it. The environment is not
recorded.

Binary output (``context.shell.binary``): ``ops.process`` keeps bytes that are not UTF-8 as
surrogates; the engine replaces each binary run with ``[binary output: N bytes (lines A-B), not
shown · expand ID]`` (text around it kept, the exit code line too) and the archive holds the run
escaped byte by byte (``\\xNN``); ``raw=True`` sends that escaped form instead of U+FFFD junk.

Rules kept here on top of the engine's: *never worse* is re-checked on the final text (the
archive id replaces the ``{archive}`` placeholder, which can change the token count); the
real exit code is returned; nothing omitted without an archive to expand it from.

The answer cap (``ops.cap``, the same cap as reads: 20,000 tokens): an answer over it, raw
(``raw=True``) or compressed, is cut. Its text (the answer as it would have been, archive ids
and notes included) is archived whole; the agent receives its first lines, a notice saying
how many lines (and about how many tokens) were left out with the ``lean-ctx expand ID
--lines N-M`` that gets them, and its last few lines (the summary and ``[exit N]`` stay). A
single line too long to send is cut by characters (``--lines 'L[A-B]'`` gets the rest).
``shell.ran`` records the tokens actually sent (the budget warning line the run brings included,
``ops.budget_line``) and ``omitted_lines`` counts the lines left out
by compression plus those cut by the cap. It names one archive: the full output's when
compression omitted lines (its id is in the markers), else the capped answer's. A capped run
also records, for the savings accounting, the tokens of the whole answer the cap cut
(``answer_tokens``), those of it not sent (``deferred_tokens``: the notice's ``~N tokens``)
and the capped answer's archive (``capped_archive_id``).

Standard input: ``stdin`` (a file descriptor or a file object) is given to the command as its
standard input; the CLI passes its own when it is not a terminal (``echo x | lean-ctx shell --
cat``). Without it (MCP, HTTP: they have no standard input) the command reads an empty input.

A cancelled run (``ops.process``: its MCP call was cancelled, exit 130) reaches no one: its
output so far is archived (the archive ``shell.ran`` names) even when nothing was omitted.

``compress_captured`` is the same pipeline for output captured earlier (``lean-ctx
compress --as CMD``). Running the process is ``ops.process``; sending an archive back
(``expand``) is ``ops.expand`` (both re-exported here).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..archive import ArchiveStore
from ..commands.shell import ArchiveInfo, CheckShellBudget, RecordShell
from ..context.secret_providers import KEY_BEGIN
from ..context.secrets import redact, scrub
from ..errors import InvalidInput
from .budget_line import sent_with_warning, with_warning
from .cap import ANSWER_CAP_TOKENS, Cut, cap_lines, check_cap
from .expand import Expansion, expand, parse_line_range
from .process import DEFAULT_MAX_OUTPUT_BYTES, TIMEOUT_EXIT_CODE, StdinSource, execute

if TYPE_CHECKING:
    from ..app import LeanCtx
    from ..projections.budgets import BudgetState

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "TIMEOUT_EXIT_CODE",
    "Expansion",
    "ShellResult",
    "compress_captured",
    "expand",
    "parse_line_range",
    "run_shell",
]



class ShellResult(msgspec.Struct, frozen=True):
    """What a shell run (or a compressed capture) sends back, with its accounting."""

    command: str  # as recorded (secrets redacted)
    exit_code: int
    text: str  # what the agent receives (archive ids filled in, notes appended)
    pattern: str  # the engine's pattern, or "raw"
    raw_tokens: int  # the whole (redacted) output as a plain run shows it
    sent_tokens: int  # tokens of ``text``
    omitted_lines: int
    archive_id: str | None
    duration_ms: float
    redactions: int
    timed_out: bool = False
    captured: bool = False
    budget_warning: str | None = None
    encoding: str = "o200k_base"
    capped: bool = False  # over the answer cap: cut, the whole answer archived (``archive_id``), said in text
    capped_archive_id: str | None = None  # the archive of the whole answer, when capped

    @property
    def saved_tokens(self) -> int:
        return self.raw_tokens - self.sent_tokens


# ----------------------------------------------------------------------------- secrets

# A private key block whose END line never came (the command timed out, or the capture limit
# cut the middle) left after redact(): its key lines are cut out here. Both start where
# redact()'s rule does (KEY_BEGIN: a marker followed by a key body), so a marker named in code
# (``_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"``, a grep for it) is kept.
_OPEN_KEY = re.compile(
    KEY_BEGIN + r"[^\S\n]*\n?"
    r"(?:(?:[A-Za-z0-9+/=]+|[\w-]+: [^\n]*)?[^\S\n]*(?:\n|$))*"
)


_KEY_IN_COMMAND = re.compile(KEY_BEGIN + r"[\s\S]*")


def _redact(text: str, *, command: bool = False, also: list[str] | None = None) -> tuple[str, int, list[str]]:
    """``text`` with its secrets redacted, how many there were, and the values found. In a
    command line the key's lines are not lines (``printf '...\\nMIIE...'``): from an
    unterminated BEGIN on, the rest of the command is cut; and secrets the command printed
    (``also``: found in its output) are scrubbed from it even where no pattern matches there."""
    r = redact(text)
    out, n = r.text, r.count
    if also:
        out, extra_scrubbed = scrub(out, also)
        n += extra_scrubbed
    if "PRIVATE KEY" in out:
        out, extra = (_KEY_IN_COMMAND if command else _OPEN_KEY).subn(
            "[REDACTED:private_key]" if command else "[REDACTED:private_key]\n", out)
        n += extra
    return out, n, r.found


def _env_secrets(passed: Mapping[str, str]) -> list[str]:
    """The values of ``env_passthrough`` whose name says they are secret (``DB_PASSWORD``,
    ``GITHUB_TOKEN``: what ``redact`` would take out of ``NAME="value"``): the command may print
    them bare (``echo $DB_PASSWORD``), where no rule would see them, so they are scrubbed from
    its output and command line as ``[REDACTED:echoed]``. The environment itself is never
    recorded."""
    return [v for k, v in passed.items()
            if v.strip() and any(redact(t).count for t in (f'{k}="{v}"', f"{k}={v}"))]


# ----------------------------------------------------------------------------- budget


def _budget_precheck(lc: LeanCtx, actor: str | None, session_id: str | None, project: str | None,
                     now: float | None) -> None:
    """Refuse before running when the agent's budget is already spent. The read is lock-free;
    only an apparent refusal goes through the bus (decided under the lock, and recorded)."""
    if not actor:
        return
    from ..projections.budgets import check_budget

    if check_budget(lc.projections.reader("budgets"), actor).level == "exceeded":
        lc.bus.dispatch(CheckShellBudget(), actor=actor, session_id=session_id, project=project, now=now)


# ----------------------------------------------------------------------------- running

def _argv_of(command: str | Sequence[str]) -> tuple[list[str], str]:
    """(argv to execute, the command line as text)."""
    if isinstance(command, str):
        if not command.strip():
            raise InvalidInput("SHELL_EMPTY_COMMAND", "give a command to run, e.g. `lean-ctx shell -- git status`")
        return ["bash", "-c", command], command
    argv = [str(a) for a in command]
    if not argv or not argv[0]:
        raise InvalidInput("SHELL_EMPTY_COMMAND", "give a command to run, e.g. `lean-ctx shell -- git status`")
    return argv, shlex.join(argv)


# ----------------------------------------------------------------------------- the cap


TAIL_TOKENS = 1000  # a capped answer keeps its last lines (summary, [exit N]) up to this many tokens
TAIL_LINES = 20


def _cap(store: ArchiveStore, text: str, cap: int, encoding: str) -> tuple[str, ArchiveInfo | None, Cut | None]:
    """``text`` when it fits in ``cap`` tokens; else its head and tail around a notice, the
    whole text archived (the ``ArchiveInfo`` to record, and the cut)."""
    from ..context.tokens import count_tokens

    lines = text.split("\n")
    full = text if text.endswith("\n") else text + "\n"
    archive_id, digest = ArchiveStore.id_of(full)
    call = f"lean-ctx expand {archive_id}"

    def notice(cut: Cut) -> str:
        parts = []
        first = cut.first_unsent
        if cut.chars:
            length = len(lines[cut.head])
            parts.append(f"line {first} cut after character {cut.chars:,} of {length:,}: rest of it: {call} --lines"
                         f" '{first}[{cut.chars + 1}-{min(length, 2 * cut.chars)}]'")
            first += 1
        if first <= cut.last_unsent:
            n = cut.last_unsent - first + 1
            parts.append(f"line{'s' if n != 1 else ''} {first}-{cut.last_unsent} ({n:,} line{'s' if n != 1 else ''})"
                         f" not sent: {call} --lines {first}-{cut.last_unsent}")
        return (f"[… capped at {cap:,} tokens: {' · '.join(parts)} (~{cut.rest_tokens:,} tokens; the whole"
                f" {cut.total:,}-line answer is archive {archive_id})]")

    capped, cut = cap_lines(lines, cap, notice, encoding=encoding, tail_tokens=min(TAIL_TOKENS, cap // 10),
                            tail_lines=TAIL_LINES)
    if cut is None:
        return text, None, None
    store.put(full)  # before the events that name it
    info = ArchiveInfo(archive_id=archive_id, sha256=digest, bytes=len(full.encode("utf-8", "surrogatepass")),
                       lines=len(lines), tokens=count_tokens(full, encoding))
    return capped, info, cut


# ----------------------------------------------------------------------------- compress + record


def _archive_info(full: str, encoding: str) -> ArchiveInfo:
    """What ``shell.record`` is told of the archive of the output ``full``."""
    from ..context.tokens import count_tokens

    archive_id, digest = ArchiveStore.id_of(full)
    return ArchiveInfo(archive_id=archive_id, sha256=digest, bytes=len(full.encode("utf-8", "surrogatepass")),
                       lines=full.count("\n"), tokens=count_tokens(full, encoding))


def _sent_spans(cut: Cut) -> list[list[int]]:
    """The lines of the capped answer's archive it sent whole: its head and its tail, as runs."""
    spans = [[1, cut.head]] if cut.head else []
    if cut.tail:
        spans.append([cut.total - cut.tail + 1, cut.total])
    return spans


def _process(
    lc: LeanCtx,
    *,
    command_text: str,
    pattern_command: str | list[str],
    stdout: str,
    stderr: str,
    exit_code: int,
    duration_ms: float,
    captured: bool,
    notes: Sequence[str],
    raw: bool,
    actor: str | None,
    session_id: str | None,
    project: str | None,
    now: float | None,
    encoding: str,
    timed_out: bool = False,
    cap_tokens: int = ANSWER_CAP_TOKENS,
    secrets: Sequence[str] = (),
    cancelled: bool = False,
) -> ShellResult:
    from ..context.shell import archive_text, compress, fill_archive, raw_render
    from ..context.shell.binary import escaped
    from ..context.tokens import count_tokens

    # secrets out first: nothing below (engine, archive, log, answer) ever sees them
    # a secret found in the command line (``curl -u user:PASS``) is scrubbed from the output and
    # from the rest of the command too, and one found in the output from the command
    found_cmd = _redact(command_text, command=True, also=list(secrets))[2]
    out, n_out, found_out = _redact(stdout, also=[*secrets, *found_cmd])
    err, n_err, found_err = _redact(stderr, also=[*secrets, *found_cmd])
    cmd_text = _redact(command_text, command=True, also=[*found_cmd, *found_out, *found_err, *secrets])[0]
    redactions = n_out + n_err
    plain = raw_render(out, err, exit_code)  # binary as a plain decode shows it: what raw_tokens counts
    c = None if raw else compress(pattern_command, out, err, exit_code, encoding=encoding)
    raw_tokens = c.raw_tokens if c is not None else count_tokens(plain, encoding)
    # --raw sends everything, binary runs escaped byte by byte (\xNN) rather than as U+FFFD
    shown = raw_render(escaped(out), escaped(err), exit_code) if raw else plain
    body, pattern, omitted, info, full = shown, "raw", 0, None, ""
    if c is not None and c.pattern != "raw":
        body, pattern, omitted = c.text, c.pattern, c.omitted_lines
        if c.omitted_lines:
            full = archive_text(out, err, pattern_command)
            info = _archive_info(full, encoding)
            body = fill_archive(c.text, info.archive_id)
        if count_tokens(body, encoding) >= raw_tokens:  # never worse, on the text actually sent
            body, pattern, omitted, info = plain, "raw", 0, None
    if cancelled and info is None and (out or err):  # its answer reaches no one: the output so far is kept
        full = archive_text(out, err, pattern_command)
        info = _archive_info(full, encoding)
    store = ArchiveStore.beside(lc.db)
    if info is not None:  # written before the events that name it
        store.put(full)
    text = "\n".join([body, *notes]) if notes else body
    text, cut_info, cut = _cap(store, text, cap_tokens, encoding)
    answer_tokens = deferred = None
    if cut is not None:
        omitted += cut.unsent
        info = info or cut_info
        # the savings accounting of a cap (what the answer covered, what it deferred)
        answer_tokens = cut.whole_tokens  # the cap counted the whole answer already
        deferred = min(max(cut.rest_tokens, 0), answer_tokens)
    sent_tokens = sent_with_warning(lc, actor, text, count_tokens(text, encoding), encoding)  # the line is sent
    rec = lc.bus.dispatch(
        RecordShell(command=cmd_text[:2000], pattern=pattern, exit_code=exit_code, raw_tokens=raw_tokens,
                    sent_tokens=sent_tokens, omitted_lines=omitted, archive=info, duration_ms=round(duration_ms, 3),
                    captured=captured, redactions=redactions, encoding=encoding,
                    extra_archives=[cut_info] if cut_info is not None and cut_info is not info else [],
                    answer_tokens=answer_tokens, deferred_tokens=deferred,
                    capped_archive_id=cut_info.archive_id if cut_info is not None else None,
                    line_spans=_sent_spans(cut) if cut is not None else None),
        actor=actor, session_id=session_id, project=project, now=now,
    ).value
    budget: BudgetState | None = rec.budget
    warning = budget.warning_line if budget is not None else None
    text = with_warning(text, warning)
    return ShellResult(
        command=cmd_text, exit_code=exit_code, text=text, pattern=pattern, raw_tokens=raw_tokens,
        sent_tokens=sent_tokens, omitted_lines=omitted, archive_id=info.archive_id if info else None,
        duration_ms=round(duration_ms, 3), redactions=redactions, timed_out=timed_out, captured=captured,
        budget_warning=warning, encoding=encoding, capped=cut is not None,
        capped_archive_id=cut_info.archive_id if cut_info is not None else None,
    )


def run_shell(
    lc: LeanCtx,
    argv_or_string: str | Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    env_passthrough: Mapping[str, str] | None = None,
    actor: str | None = None,
    session_id: str | None = None,
    project: str | None = None,
    now: float | None = None,
    raw: bool = False,
    encoding: str = "o200k_base",
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
    stdin: StdinSource = None,
    cap_tokens: int = ANSWER_CAP_TOKENS,
) -> ShellResult:
    """Run a command and return its compressed, redacted output and its real exit code.

    ``argv_or_string``: an argv list (run directly) or a string (run with ``bash -c``).
    ``timeout`` (seconds, None = none): the process group is killed and the exit code is 124.
    ``env_passthrough``: variables added to (or overriding) this process's environment.
    ``raw``: send the (redacted) output uncompressed. ``stdin``: a file descriptor or file
    object given to the command as its standard input (default: an empty one). The answer is
    at most ``cap_tokens`` tokens (see the module doc). Refused with ``BUDGET_EXCEEDED`` before
    running when ``actor`` has spent its token budget.
    """
    argv, command_text = _argv_of(argv_or_string)
    if timeout is not None and not timeout > 0:
        raise InvalidInput("SHELL_INVALID_TIMEOUT", f"timeout must be a positive number of seconds; got {timeout}")
    workdir = None if cwd is None else os.fspath(cwd)
    if workdir is not None and not os.path.isdir(workdir):
        raise InvalidInput("SHELL_INVALID_CWD", f"{workdir!r} is not a directory; give an existing --cwd")
    passed = {str(k): str(v) for k, v in (env_passthrough or {}).items()}
    env = {**os.environ, **passed}
    check_cap(cap_tokens, "SHELL_INVALID_CAP")
    _budget_precheck(lc, actor, session_id, project, now)
    run = execute(argv, workdir, env, timeout, max_output_bytes, stdin)
    pattern_command: str | list[str] = argv_or_string if isinstance(argv_or_string, str) else argv
    return _process(
        lc, command_text=command_text, pattern_command=pattern_command, stdout=run.stdout, stderr=run.stderr,
        exit_code=run.exit_code, duration_ms=run.duration_ms, captured=False, notes=[run.note] if run.note else [],
        raw=raw, actor=actor, session_id=session_id, project=project, now=now, encoding=encoding,
        timed_out=run.timed_out, cap_tokens=cap_tokens, secrets=_env_secrets(passed), cancelled=run.cancelled,
    )


def compress_captured(
    lc: LeanCtx,
    as_command: str | Sequence[str],
    text: str,
    *,
    stderr: str = "",
    exit_code: int = 0,
    actor: str | None = None,
    session_id: str | None = None,
    project: str | None = None,
    now: float | None = None,
    encoding: str = "o200k_base",
    cap_tokens: int = ANSWER_CAP_TOKENS,
) -> ShellResult:
    """Compress output captured earlier as if ``as_command`` had produced it (same patterns,
    redaction, never-worse and omission rules as ``run_shell``); recorded with ``captured``."""
    pattern_command: str | list[str]
    if isinstance(as_command, str):
        command_text, pattern_command = as_command, as_command
    else:
        pattern_command = [str(a) for a in as_command]
        command_text = shlex.join(pattern_command)
    if not command_text.strip():
        raise InvalidInput("SHELL_EMPTY_COMMAND", 'name the command that produced the output: --as "git status"')
    check_cap(cap_tokens, "SHELL_INVALID_CAP")
    _budget_precheck(lc, actor, session_id, project, now)
    return _process(
        lc, command_text=command_text, pattern_command=pattern_command, stdout=text, stderr=stderr,
        exit_code=exit_code, duration_ms=0.0, captured=True, notes=[], raw=False, actor=actor,
        session_id=session_id, project=project, now=now, encoding=encoding, cap_tokens=cap_tokens,
    )
