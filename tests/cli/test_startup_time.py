"""Start-up cost of the CLI: generous bounds only (bench/bench_startup.py prints the figures),
and what a short call must not load."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
BOUND_S = 3.0  # CPU seconds of the client process: ~0.1-0.5 s measured; a machine under load shifts wall time, not CPU


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_DB", "LEAN_CTX_SESSION_ID")}
    return {**env, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", "LEAN_CTX_AGENT_ID": "t"}


def _cpu_seconds(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(argv, check=False, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, (argv, p.stdout, p.stderr)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["read", "small.py"], ["overview"]])
def test_short_calls_start_within_a_generous_bound(args: list[str], tmp_path: Path, home: Path) -> None:
    (tmp_path / "small.py").write_text("def f(x):\n    return x + 1\n")
    env = _env(home)
    _cpu_seconds([LEAN_CTX, *args], env, tmp_path)  # bytecode and the tokenizer cache, as after installation
    cpu = _cpu_seconds([LEAN_CTX, *args], env, tmp_path)
    assert cpu < BOUND_S, f"lean-ctx {' '.join(args)}: {cpu:.2f} s of CPU"


_PROBE = """
import sys
from leanctx.api.cli.app import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
verbs = sorted(m for m in sys.modules if m.startswith("leanctx.api.cli.") and m.endswith("_cmd"))
sys.stderr.write(f"PROBE {code} {int('tiktoken' in sys.modules)} {','.join(verbs) or '-'}\\n")
"""


def _probe(args: list[str], home: Path, cwd: Path) -> tuple[str, str, list[str]]:
    p = subprocess.run([sys.executable, "-c", _PROBE, *args], check=False, env=_env(home), cwd=cwd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=120)
    line = next(x for x in p.stderr.splitlines() if x.startswith("PROBE "))
    _, code, tk, verbs = line.split(" ")
    return code, tk, verbs.split(",")


def test_version_loads_no_verb_module_and_help_loads_them_all(tmp_path: Path, home: Path) -> None:
    assert _probe(["--version"], home, tmp_path) == ("0", "0", ["-"])
    code, _, verbs = _probe(["--help", "--version"], home, tmp_path)
    assert code == "0" and "leanctx.api.cli.read_cmd" in verbs and len(verbs) > 10


def test_a_short_read_builds_no_tiktoken_encoder(tmp_path: Path, home: Path) -> None:
    (tmp_path / "small.py").write_text("def f(x):\n    return x + 1  # → one — two\n")
    for _ in range(2):  # the first fills the tokenizer cache
        code, tk, verbs = _probe(["read", "small.py"], home, tmp_path)
        assert (code, verbs) == ("0", ["leanctx.api.cli.read_cmd"])
    assert tk == "0"
