"""The regular expressions compiled ahead of time (zymi_tui/regex_cache.py): each is the very pattern
`re`'s own compiler makes of its text, and a `run` no longer runs that compiler for them."""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from zymi_tui import regex_cache


def _stored() -> dict[str, Any]:
    stored: dict[str, Any] = marshal.loads(Path(regex_cache.data_path()).read_bytes())
    return stored


def test_the_file_is_made_for_this_python() -> None:
    assert _stored()["python"] == regex_cache.python_key(), "run scripts/regex_cache.py for this Python"


def test_each_seeded_pattern_is_the_one_re_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(re, "_cache", {})
    stored = _stored()["patterns"]
    assert regex_cache.seed() == len(stored) > 50
    for pattern, asked, *_ in stored:
        seeded = re._cache[type(pattern), pattern, asked]  # type: ignore[attr-defined]
        fresh = re._compiler.compile(pattern, asked)  # type: ignore[attr-defined]  # re's compiler, not the cache
        assert seeded is not fresh
        assert seeded == fresh, pattern  # a pattern equals another only with the same flags and code
        assert (seeded.groups, seeded.groupindex) == (fresh.groups, fresh.groupindex), pattern
        assert re.compile(pattern, asked) is seeded  # what `re.compile` now hands out


def test_a_file_of_another_python_seeds_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stored = _stored()
    foreign = tmp_path / "foreign.marshal"
    foreign.write_bytes(marshal.dumps({**stored, "python": ("2.7.18", *stored["python"][1:])}))
    monkeypatch.setattr(re, "_cache", {})
    monkeypatch.setattr(regex_cache, "data_path", lambda: str(foreign))
    assert regex_cache.seed() == 0 and re._cache == {}  # type: ignore[attr-defined]
    monkeypatch.setattr(regex_cache, "data_path", lambda: str(tmp_path / "missing"))
    assert regex_cache.seed() == 0


# a `run` whose every call to re's compiler is recorded (the package seeds its cache as it is imported)
RECORDED_RUN = """
import json, re, sys
compiled = []
compile = re._compiler.compile
def recording(p, flags=0):
    compiled.append(p if isinstance(p, str) else repr(p))
    return compile(p, flags)
re._compiler.compile = recording
from zymi_tui.cli import main
code = main(["run", "main", "-i", "task=list the files, then read README.md"])
print(json.dumps(compiled), file=sys.stderr)
sys.exit(code)
"""


def test_a_run_compiles_only_its_projects_patterns(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "zymi_tui", "init"], cwd=tmp_path, capture_output=True, check=True)
    done = subprocess.run(
        [sys.executable, "-c", RECORDED_RUN], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Pipeline completed successfully." in done.stdout
    compiled = json.loads(done.stderr.strip().splitlines()[-1])
    # left: the project's own policy rules (`allow: ["ls *", ...]` as zymi compiles them), nothing else
    assert all(p.startswith("^") and p.endswith("$") for p in compiled), compiled
    assert len(compiled) <= 10, compiled
