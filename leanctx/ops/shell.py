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

Rules kept here on top of the engine's: *never worse* is re-checked on the final text (the
archive id replaces the ``{archive}`` placeholder, which can change the token count); the
real exit code is returned; nothing omitted without an archive to expand it from.

``compress_captured`` is the same pipeline for output captured earlier (``lean-ctx
compress --as CMD``); ``expand`` sends back an archive, whole or a head, tail, line range or
the lines matching a regex (numbered), and records ``archive.expanded``.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..archive import ArchiveStore
from ..commands.shell import ArchiveInfo, CheckShellBudget, ExpandArchive, RecordShell
from ..context.secrets import redact, scrub
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..app import LeanCtx
    from ..projections.budgets import BudgetState

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "Expansion",
    "ShellResult",
    "TIMEOUT_EXIT_CODE",
    "compress_captured",
    "expand",
    "parse_line_range",
    "run_shell",
]

TIMEOUT_EXIT_CODE = 124  # as timeout(1) reports it
DEFAULT_MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # per stream; beyond it the middle is not kept
KILL_GRACE_SECONDS = 2.0  # SIGTERM, then SIGKILL after this
EOF_GRACE_SECONDS = 2.0  # after the process exits, how long background children may hold its pipes
_CHUNK = 65536


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

    @property
    def saved_tokens(self) -> int:
        return self.raw_tokens - self.sent_tokens


class Expansion(msgspec.Struct, frozen=True):
    archive_id: str
    selector: str  # full | head:N | tail:N | lines:A-B | grep:RE
    text: str
    lines: int  # lines of the archive selected
    total_lines: int  # lines in the archive
    sent_tokens: int
    truncated_lines: int = 0  # selected lines left out to stay under max_tokens (stated in text)
    budget_warning: str | None = None


# ----------------------------------------------------------------------------- secrets

# A private key block whose END line never came (the command timed out, or the capture limit
# cut the middle): redact() matches whole blocks only, so the key lines are cut out here.
_OPEN_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[^\S\n]*\n?"
    r"(?:(?:[A-Za-z0-9+/=]+|[\w-]+: [^\n]*)?[^\S\n]*(?:\n|$))*"
)


_KEY_IN_COMMAND = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*")


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


# ----------------------------------------------------------------------------- budget


def _budget_precheck(lc: "LeanCtx", actor: str | None, session_id: str | None, project: str | None,
                     now: float | None) -> None:
    """Refuse before running when the agent's budget is already spent. The read is lock-free;
    only an apparent refusal goes through the bus (decided under the lock, and recorded)."""
    if not actor:
        return
    from ..projections.budgets import check_budget

    if check_budget(lc.projections.reader("budgets"), actor).level == "exceeded":
        lc.bus.dispatch(CheckShellBudget(), actor=actor, session_id=session_id, project=project, now=now)


# ----------------------------------------------------------------------------- running


class _Reader(threading.Thread):
    """Drains one pipe; keeps the first and last ``cap/2`` bytes and counts the rest."""

    def __init__(self, fd: int, cap: int) -> None:
        super().__init__(daemon=True)
        self.fd = fd
        self.half = max(cap // 2, 1)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.dropped = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while True:
                chunk = os.read(self.fd, _CHUNK)
                if not chunk:
                    break
                with self.lock:
                    self._add(chunk)
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def _add(self, chunk: bytes) -> None:
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_bytes += len(chunk)
        while self.tail_bytes > self.half:
            first = self.tail[0]
            excess = self.tail_bytes - self.half
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_bytes -= len(first)
                self.dropped += len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_bytes -= excess
                self.dropped += excess

    def text(self) -> str:
        with self.lock:
            head, tail, dropped = bytes(self.head), b"".join(self.tail), self.dropped
        if not dropped:
            return (head + tail).decode("utf-8", "replace")
        h = head.decode("utf-8", "replace")
        if not h.endswith("\n"):
            h += "\n"
        note = f"[lean-ctx: {dropped} bytes of output in the middle were not captured (over the capture limit)]\n"
        return h + note + tail.decode("utf-8", "replace")


class _Run(msgspec.Struct):
    stdout: str
    stderr: str
    exit_code: int
    duration_ms: float
    timed_out: bool = False
    note: str | None = None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it is still there after a grace period."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    try:  # the leader may be gone while others in its group are not
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _execute(argv: list[str], cwd: str | None, env: dict[str, str], timeout: float | None, cap: int) -> _Run:
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout kills every child it started
        )
    except FileNotFoundError:
        return _Run("", f"lean-ctx: {argv[0]}: command not found\n", 127, (time.perf_counter() - t0) * 1000)
    except PermissionError:
        return _Run("", f"lean-ctx: {argv[0]}: permission denied\n", 126, (time.perf_counter() - t0) * 1000)
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_Reader(os.dup(proc.stdout.fileno()), cap), _Reader(os.dup(proc.stderr.fileno()), cap)]
    proc.stdout.close()
    proc.stderr.close()
    for r in readers:
        r.start()
    timed_out = False
    note = None
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        note = f"[timed out after {timeout:g}s: the command's process group was killed]"
    except BaseException:  # Ctrl-C in the CLI: the child is in its own session and would not get it
        _kill_group(proc)
        raise
    duration = (time.perf_counter() - t0) * 1000
    deadline = time.monotonic() + EOF_GRACE_SECONDS
    for r in readers:
        r.join(max(0.0, deadline - time.monotonic()))
    if any(r.is_alive() for r in readers):
        extra = "[the command exited but processes it started in the background still hold its output; output after exit is not shown]"
        note = f"{note}\n{extra}" if note else extra
    code = TIMEOUT_EXIT_CODE if timed_out else proc.returncode
    if code < 0:  # killed by a signal: report it the way a shell does
        code = 128 - code
    return _Run(readers[0].text(), readers[1].text(), code, duration, timed_out, note)


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


# ----------------------------------------------------------------------------- compress + record


def _process(
    lc: "LeanCtx",
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
) -> ShellResult:
    from ..context.shell import archive_text, compress, fill_archive, raw_render
    from ..context.tokens import count_tokens

    # secrets out first: nothing below (engine, archive, log, answer) ever sees them
    out, n_out, found_out = _redact(stdout)
    err, n_err, found_err = _redact(stderr)
    cmd_text = _redact(command_text, command=True, also=[*found_out, *found_err])[0]
    redactions = n_out + n_err
    plain = raw_render(out, err, exit_code)
    c = None if raw else compress(pattern_command, out, err, exit_code, encoding=encoding)
    raw_tokens = c.raw_tokens if c is not None else count_tokens(plain, encoding)
    body, pattern, omitted, info, full = plain, "raw", 0, None, ""
    if c is not None and c.pattern != "raw":
        body, pattern, omitted = c.text, c.pattern, c.omitted_lines
        if c.omitted_lines:
            full = archive_text(out, err)
            archive_id, digest = ArchiveStore.id_of(full)
            body = fill_archive(c.text, archive_id)
            info = ArchiveInfo(archive_id=archive_id, sha256=digest, bytes=len(full.encode("utf-8", "surrogatepass")),
                               lines=full.count("\n"), tokens=count_tokens(full, encoding))
        if count_tokens(body, encoding) >= raw_tokens:  # never worse, on the text actually sent
            body, pattern, omitted, info = plain, "raw", 0, None
    if info is not None:  # written before the events that name it
        ArchiveStore.beside(lc.db).put(full)
    text = "\n".join([body, *notes]) if notes else body
    sent_tokens = count_tokens(text, encoding)
    rec = lc.bus.dispatch(
        RecordShell(command=cmd_text[:2000], pattern=pattern, exit_code=exit_code, raw_tokens=raw_tokens,
                    sent_tokens=sent_tokens, omitted_lines=omitted, archive=info, duration_ms=round(duration_ms, 3),
                    captured=captured, redactions=redactions, encoding=encoding),
        actor=actor, session_id=session_id, project=project, now=now,
    ).value
    budget: BudgetState | None = rec.budget
    warning = budget.warning_line if budget is not None else None
    if warning:
        text = f"{text}\n[{warning}]"
    return ShellResult(
        command=cmd_text, exit_code=exit_code, text=text, pattern=pattern, raw_tokens=raw_tokens,
        sent_tokens=sent_tokens, omitted_lines=omitted, archive_id=info.archive_id if info else None,
        duration_ms=round(duration_ms, 3), redactions=redactions, timed_out=timed_out, captured=captured,
        budget_warning=warning, encoding=encoding,
    )


def run_shell(
    lc: "LeanCtx",
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
) -> ShellResult:
    """Run a command and return its compressed, redacted output and its real exit code.

    ``argv_or_string``: an argv list (run directly) or a string (run with ``bash -c``).
    ``timeout`` (seconds, None = none): the process group is killed and the exit code is 124.
    ``env_passthrough``: variables added to (or overriding) this process's environment.
    ``raw``: send the (redacted) output uncompressed. Refused with ``BUDGET_EXCEEDED`` before
    running when ``actor`` has spent its token budget.
    """
    argv, command_text = _argv_of(argv_or_string)
    if timeout is not None and not timeout > 0:
        raise InvalidInput("SHELL_INVALID_TIMEOUT", f"timeout must be a positive number of seconds; got {timeout}")
    workdir = None if cwd is None else os.fspath(cwd)
    if workdir is not None and not os.path.isdir(workdir):
        raise InvalidInput("SHELL_INVALID_CWD", f"{workdir!r} is not a directory; give an existing --cwd")
    env = {**os.environ, **{str(k): str(v) for k, v in (env_passthrough or {}).items()}}
    _budget_precheck(lc, actor, session_id, project, now)
    run = _execute(argv, workdir, env, timeout, max_output_bytes)
    pattern_command: str | list[str] = argv_or_string if isinstance(argv_or_string, str) else argv
    return _process(
        lc, command_text=command_text, pattern_command=pattern_command, stdout=run.stdout, stderr=run.stderr,
        exit_code=run.exit_code, duration_ms=run.duration_ms, captured=False, notes=[run.note] if run.note else [],
        raw=raw, actor=actor, session_id=session_id, project=project, now=now, encoding=encoding,
        timed_out=run.timed_out,
    )


def compress_captured(
    lc: "LeanCtx",
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
) -> ShellResult:
    """Compress output captured earlier as if ``as_command`` had produced it (same patterns,
    redaction, never-worse and omission rules as ``run_shell``); recorded with ``captured``."""
    if isinstance(as_command, str):
        command_text, pattern_command = as_command, as_command
    else:
        pattern_command = [str(a) for a in as_command]
        command_text = shlex.join(pattern_command)
    if not command_text.strip():
        raise InvalidInput("SHELL_EMPTY_COMMAND", 'name the command that produced the output: --as "git status"')
    _budget_precheck(lc, actor, session_id, project, now)
    return _process(
        lc, command_text=command_text, pattern_command=pattern_command, stdout=text, stderr=stderr,
        exit_code=exit_code, duration_ms=0.0, captured=True, notes=[], raw=False, actor=actor,
        session_id=session_id, project=project, now=now, encoding=encoding,
    )


# ----------------------------------------------------------------------------- expand

_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)?\s*)?$")


def parse_line_range(spec: str) -> tuple[int, int | None]:
    """``"A-B"`` → (A, B); ``"A-"`` → (A, None: to the end); ``"A"`` → (A, A). 1-based, inclusive."""
    m = _RANGE.match(spec)
    if not m:
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r} is not a line range; use A-B (e.g. 120-180), A- or A")
    a = int(m.group(1))
    b = None if (m.group(2) is None and ("-" in spec or ":" in spec)) else int(m.group(2) or a)
    if a < 1 or (b is not None and b < a):
        raise InvalidInput("EXPAND_INVALID_RANGE", f"{spec!r}: lines are numbered from 1 and A must not exceed B")
    return a, b


def _select(lines: list[str], head: int | None, tail: int | None, line_range: str | None,
            grep: str | None) -> tuple[str, list[tuple[int, str]], bool]:
    """(selector, [(1-based number, line)], numbered?)."""
    given = [k for k, v in (("head", head), ("tail", tail), ("lines", line_range), ("grep", grep)) if v is not None]
    if len(given) > 1:
        raise InvalidInput("EXPAND_ONE_SELECTOR", f"use one of --head, --tail, --lines, --grep (got {', '.join(given)})")
    numbered = list(enumerate(lines, 1))
    if head is not None:
        if head < 0:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--head takes a non-negative number of lines")
        return f"head:{head}", numbered[:head], False
    if tail is not None:
        if tail < 0:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--tail takes a non-negative number of lines")
        return f"tail:{tail}", numbered[len(numbered) - tail :] if tail else [], False
    if line_range is not None:
        a, b = parse_line_range(line_range)
        end = len(lines) if b is None else min(b, len(lines))
        return f"lines:{a}-{'' if b is None else b}", numbered[a - 1 : end], True
    if grep is not None:
        try:
            rx = re.compile(grep)
        except re.error as exc:
            raise InvalidInput("EXPAND_INVALID_REGEX", f"--grep {grep!r} is not a valid regular expression: {exc}") from None
        return f"grep:{grep}", [(k, ln) for k, ln in numbered if rx.search(ln)], True
    return "full", numbered, False


def expand(
    lc: "LeanCtx",
    archive_id: str,
    head: int | None = None,
    tail: int | None = None,
    lines: str | None = None,
    grep: str | None = None,
    *,
    max_tokens: int | None = None,
    actor: str | None = None,
    session_id: str | None = None,
    project: str | None = None,
    now: float | None = None,
    encoding: str = "o200k_base",
) -> Expansion:
    """Send back an archive: whole, ``head`` / ``tail`` N lines, a line range ``"A-B"`` or the
    lines matching the regex ``grep``. Line ranges and grep results are numbered ``N:line``
    (the numbers of the omission markers). With ``max_tokens`` the selection is cut at a line
    boundary and the text says which lines were left out and how to get them."""
    from ..context.tokens import count_tokens

    archive_id = archive_id.strip()
    text = ArchiveStore.beside(lc.db).get(archive_id)
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    selector, chosen, numbered = _select(all_lines, head, tail, lines, grep)
    rendered = [f"{k}:{ln}" if numbered else ln for k, ln in chosen]
    truncated = 0
    if max_tokens is not None and rendered:
        if max_tokens < 1:
            raise InvalidInput("EXPAND_INVALID_COUNT", "--max-tokens must be positive")
        budget, kept = max_tokens, []
        for k, line in enumerate(rendered):
            cost = count_tokens(line + "\n", encoding)
            if cost > budget and kept:
                break
            kept.append(line)
            budget -= cost
            if budget <= 0:
                break
        truncated = len(rendered) - len(kept)
        if truncated:
            first = chosen[len(kept)][0]
            last = chosen[-1][0]
            kept.append(f"[… {truncated} more selected lines not sent (over {max_tokens} tokens) · "
                        f"expand {archive_id} --lines {first}-{last}]")
        rendered = kept
    body = "\n".join(rendered)
    if grep is not None and not chosen:
        body = f"[no line of {archive_id} matches {grep!r}]"
    sent = count_tokens(body, encoding)
    red = redact(selector)  # a regex the agent typed could itself hold a secret
    res = lc.bus.dispatch(
        ExpandArchive(archive_id=archive_id, selector=red.text, sent_tokens=sent),
        actor=actor, session_id=session_id, project=project, now=now,
    ).value
    warning = res.budget.warning_line if res.budget is not None else None
    if warning:
        body = f"{body}\n[{warning}]"
    return Expansion(archive_id=archive_id, selector=red.text, text=body, lines=len(chosen),
                     total_lines=len(all_lines), sent_tokens=sent, truncated_lines=truncated, budget_warning=warning)
