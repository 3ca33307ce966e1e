"""Exports byte for byte: the OTLP/JSON and LHAR text of every oracle store, with and without its
project, with and without content, hashed, against the digests of main's output before the export was
made faster (tests/data/export_digests.json, written by main at 0a0f3d1). A change to what is written
must say so by updating a digest; a speed-up must leave every one alone."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ORACLE, SCENARIOS, zymi_tui_bin

DIGESTS = Path(__file__).parent / "data" / "export_digests.json"
WAYS: dict[str, list[str]] = {
    "otel_project": ["--format", "otel", "--project", "{project}"],
    "otel_bare": ["--format", "otel"],
    "otel_project_nocontent": ["--format", "otel", "--project", "{project}", "--no-content"],
    "otel_bare_nocontent": ["--format", "otel", "--no-content"],
    "lhar_project": ["--format", "lhar", "--project", "{project}", "-o", "{folder}/"],
    "lhar_bare": ["--format", "lhar", "-o", "{folder}/"],
}


def export_digest(store: str, way: str, folder: Path) -> str:
    """sha256 of what `export` writes: stdout, or each file of the folder (sorted, named). A `bare` way
    reads a copy of the store alone in a folder (beside its project, the store is found with it)."""
    db = ORACLE / store / "events.db"
    if way.startswith("otel_bare") or way.startswith("lhar_bare"):
        alone = folder.parent / f"{way}_store"
        alone.mkdir(parents=True)
        db = Path(shutil.copy(db, alone / "events.db"))
    args = [a.format(project=ORACLE / store / "project", folder=folder) for a in WAYS[way]]
    proc = subprocess.run([zymi_tui_bin(), "export", str(db), *args], capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    h = hashlib.sha256()
    if "-o" not in args:
        h.update(proc.stdout)
    else:
        for f in sorted(folder.iterdir()):
            h.update(f.name.encode() + b"\n" + f.read_bytes())
    return h.hexdigest()


@pytest.mark.parametrize("store", SCENARIOS)
def test_export_text_is_byte_identical_to_mains(store: str, tmp_path: Path) -> None:
    expected = json.loads(DIGESTS.read_text(encoding="utf-8"))[store]
    got = {way: export_digest(store, way, tmp_path / way) for way in WAYS}
    assert got == expected
