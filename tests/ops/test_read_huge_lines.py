"""``lines:`` reads of files over the 8 MiB read limit are streamed (``leanctx.ops.read_huge``):
only the lines asked for are kept, the content hash is the sha256 of every byte, redaction
(private key blocks starting before a range, markers across chunk edges) and the cap still
apply; every other mode keeps refusing with ``READ_FILE_TOO_LARGE``."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError
from leanctx.ops import read_huge, read_load
from leanctx.ops.expand import expand
from leanctx.ops.read import MAX_FILE_BYTES

from .test_read_common import LEAN_CTX, Reader

pytestmark = pytest.mark.timeout(60)

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
KEY = ["-----BEGIN PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
       "c2VjcmV0IGtleSBtYXRlcmlhbCBsaW5lIHR3bw==", "-----END PRIVATE KEY-----"]
FILLER = "filler line {:07d} of the big log, nothing to see here at all\n"


def _filler(start: int, stop: int) -> str:
    return "".join(FILLER.format(i) for i in range(start, stop))


def _big(path: Path, tail: str = "", head: str = "", size: int = MAX_FILE_BYTES + 1024) -> int:
    """``head``, numbered filler lines past ``size`` bytes, then ``tail``; the filler's first line number."""
    first = head.count("\n") + 1
    n = size // len(FILLER.format(100000)) + 1
    path.write_text(head + _filler(first, first + n) + tail)
    assert path.stat().st_size > MAX_FILE_BYTES
    return first + n  # the first line of the tail


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture()
def reader(tmp_path: Path, proj: Path) -> Any:
    with LeanCtx(tmp_path / "data" / "events.db") as lc:
        yield Reader(lc, proj)


def _body(text: str) -> list[str]:
    return text.split("\n")[1:]


def test_ranges_of_a_huge_file_are_streamed_like_any_lines_read(reader: Any, proj: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tail = f"api_key = \"{SECRET}\"\nthe needle is here\n"
    at = _big(proj / "big.log", tail)
    data = (proj / "big.log").read_bytes()
    total = data.count(b"\n")

    def never(fd: int, rel: str) -> bytes:
        raise AssertionError("the whole file was loaded")

    monkeypatch.setattr(read_load, "_read_all", never)
    a = reader.one("big.log", mode=f"lines:2-3,{at}-{at + 1}")
    head = a.text.split("\n")[0]
    assert head.startswith(f"F1=big.log [lines:2-3,{at}-{at + 1} · {total} lines · {a.sent_tokens:,} tokens")
    assert "streamed: over 8 MiB" in head and "1 secret redacted" in head
    assert _body(a.text) == [
        "… line 1 not shown",
        f"{2:>{len(str(at + 1))}}\t" + FILLER.format(2).rstrip("\n"),
        f"{3:>{len(str(at + 1))}}\t" + FILLER.format(3).rstrip("\n"),
        f"… lines 4-{at - 1} not shown ({at - 4} lines)",
        f'{at}\tapi_key = "[REDACTED:openai_key]"',
        f"{at + 1}\tthe needle is here",
    ]
    assert SECRET not in a.text
    assert a.content_hash == hashlib.sha256(data).hexdigest() and not a.capped
    again = reader.one("big.log", mode=f"lines:2-3,{at}-{at + 1}")  # the same lines, unchanged: a stub
    assert again.stub and "unchanged" in again.text
    raw = reader.one("big.log", mode=f"lines:{at}", raw=True)
    assert SECRET in raw.text
    with pytest.raises(LeanCtxError) as e:
        reader.one("big.log", mode=f"lines:{total + 1}-{total + 5}")
    assert e.value.code == "READ_INVALID_RANGE" and f"({total} lines)" in e.value.message


@pytest.mark.parametrize("mode", ["full", "map", "signatures", "auto", "aggressive", "diff"])
def test_every_other_mode_still_refuses_a_huge_file(reader: Any, proj: Path, mode: str) -> None:
    _big(proj / "big.log")
    with pytest.raises(LeanCtxError) as e:
        reader.one("big.log", mode=mode)
    assert e.value.code == "READ_FILE_TOO_LARGE"
    # the grep it names numbers lines as lean-ctx does (a lone CR ends one); plain sed/grep -n are not named
    assert r"""find their numbers with lean-ctx shell -- 'perl -pe "s/\r(?!\n)/\n/g" big.log | grep -n PATTERN'""" \
        in e.value.message, e.value.message
    assert "sed -n" not in e.value.message and "grep -n PATTERN big.log" not in e.value.message
    assert "mode lines:N-M streams just those lines" in e.value.message


def test_memory_stays_bounded_and_reads_are_chunked(reader: Any, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _big(proj / "big.log", "last\n", size=3 * MAX_FILE_BYTES // 2)
    asked: list[int] = []
    real = os.read

    def spy(fd: int, n: int) -> bytes:
        asked.append(n)
        return real(fd, n)

    monkeypatch.setattr(read_huge.os, "read", spy)
    tracemalloc.start()
    try:
        a = reader.one("big.log", mode=f"lines:1-2,{at}")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert _body(a.text)[-1] == f"{at}\tlast"
    assert asked and max(asked) <= read_huge.CHUNK
    assert peak < MAX_FILE_BYTES // 2, peak  # the file is 12 MiB
    with pytest.raises(LeanCtxError) as e:  # ranges holding more than the limit: refused, not kept
        reader.one("big.log", mode="lines:1-")
    assert e.value.code == "READ_LINES_TOO_LARGE" and f"the file has {at:,}" in e.value.message


def test_a_key_block_begun_before_the_range_is_redacted_even_across_chunks(reader: Any, proj: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The BEGIN line (split over two chunks) far before the range: the key's lines stay
    redacted, the line after its END does not."""
    monkeypatch.setattr(read_huge, "CHUNK", 4096)
    body = [f"{KEY[2][:30]}{i:04d}" for i in range(40)]
    # line 1: padding, so that BEGIN (line 2) starts 10 bytes before the first chunk ends; body 4-43, END 44
    head = "x" * (4096 - 11) + "\n" + "\n".join([*KEY[:2], *body, KEY[3], "after the key"]) + "\n"
    assert head.index("-----BEGIN") == 4096 - 10
    _big(proj / "big.log", head=head)
    a = reader.one("big.log", mode="lines:30-31,44-45")
    assert _body(a.text)[1:] == ["30\t", "31\t", "… lines 32-43 not shown (12 lines)", "44\t", "45\tafter the key",
                                 _body(a.text)[-1]]
    assert KEY[2][:30] not in a.text
    plain = reader.one("big.log", mode="lines:30-31", raw=True)  # raw: the real lines (they are the key's)
    assert KEY[2][:30] in plain.text


def test_line_ends_and_bytes_not_utf8_number_lines_like_a_normal_read(reader: Any, proj: Path) -> None:
    head = b"one\r\ntwo\rthree\xff\xfe four\r\nfive\n"
    small = proj / "small.txt"
    small.write_bytes(head + b"six\n")
    normal = reader.one("small.txt", mode="lines:1-6")
    (proj / "big.txt").write_bytes(head + _filler(6, 6 + MAX_FILE_BYTES // 50).encode())
    huge = reader.one("big.txt", mode="lines:1-5")
    assert [ln.split("\t", 1)[1] for ln in _body(huge.text)[:4]] == \
        [ln.split("\t", 1)[1] for ln in _body(normal.text)[:4]] == ["one", "two", "three\ufffd\ufffd four", "five"]
    head_line = huge.text.split("\n")[0]
    assert "2 bytes not UTF-8 shown as \ufffd" in head_line and "1 CR-only line end shown as LF" in head_line


def test_a_capped_range_is_archived_and_expandable(reader: Any, proj: Path) -> None:
    _big(proj / "big.log")
    a = reader.one("big.log", mode="lines:1-40000")
    assert a.capped and a.archive_id and a.sent_tokens <= 20_000
    m = re.search(r"lean-ctx expand (A[0-9a-f]{16}) --lines (\d+)-(\d+)", a.text)
    assert m
    e = expand(reader.lc, m.group(1), lines="40000")  # the view's line 40000 is the file's
    assert e.text == "40000\t" + FILLER.format(40000).rstrip("\n")  # the view's row as it is, not renumbered


def test_cli_lines_read_of_a_huge_file(tmp_path: Path, proj: Path) -> None:
    at = _big(proj / "big log.txt", f"api_key = \"{SECRET}\"\nthe needle is here\n")
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "cli.db"), "LEAN_CTX_NO_DAEMON": "1"}
    p = subprocess.run([LEAN_CTX, "--project", str(proj), "read", "big log.txt", "--mode", f"lines:{at}-{at + 1}"],
                       capture_output=True, text=True, env=env, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    assert f'{at}\tapi_key = "[REDACTED:openai_key]"\n{at + 1}\tthe needle is here' in p.stdout
    assert SECRET not in p.stdout
    q = subprocess.run([LEAN_CTX, "--project", str(proj), "read", "big log.txt", "--mode", "full"],
                       capture_output=True, text=True, env=env, timeout=60, check=False)
    assert q.returncode == 2 and "error[READ_FILE_TOO_LARGE]" in q.stderr
