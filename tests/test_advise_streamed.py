"""`advise --json` and `--format md` write their findings a finding at a time (`json_parts`,
`markdown_parts`): the text is the one the whole report made at once gives (json.dumps of `to_json`; the
Markdown lines joined), on a store of hostile text, with no findings, and with thousands of them, and
writing it holds a few findings' text, not the report's (16,667 findings on many_1m: ~230 MB held)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.hostile_stores import make_store_sync
from zymi_tui.events.factory import open_reader
from zymi_tui.events.location import SqliteStore
from zymi_tui.replay.advice import Advice, advise, head_lines, json_parts, markdown_parts, recommendation_lines, to_json

MANY = 3_000


def _advice(db: Path, project: Path | None) -> Advice:
    async def run() -> Advice:
        reader = await open_reader(SqliteStore(db))
        try:
            return await advise(reader, project)
        finally:
            await reader.close()

    return asyncio.run(run())


@pytest.fixture(scope="module")
def advices(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Advice]:
    tmp = tmp_path_factory.mktemp("streamed")
    out = {name: _advice(*make_store_sync(name, tmp / name)) for name in ("escapes", "markup", "empty")}
    many = out["escapes"]
    assert many.findings
    out["many"] = dataclasses.replace(many, findings=many.findings * (MANY // len(many.findings)))
    return out


def _whole_json(a: Advice) -> str:
    return json.dumps(to_json(a), indent=1, ensure_ascii=False) + "\n"


def _whole_markdown(a: Advice) -> str:
    """The Markdown report made whole (as `to_markdown` made it before it was written in parts)."""
    lines = ["# zymi-tui advise", "", f"> **{a.caveat}**", "", *head_lines(a), ""]
    if not a.findings:
        lines.append("No findings.")
    for f in a.findings:
        lines += [f"## `{f.signal}`", "", f.summary, ""]
        if f.stream_id is not None:
            lines += [f"Shown at: `{f.stream_id}` seq {f.sequence}", ""]
        lines += [f"- {e}" for e in f.evidence]
        rec = f.recommendation
        if rec is not None:
            lines += ["", f"**Recommendation:** {rec.text}", ""]
            lines += [f"- {line}" for line in recommendation_lines(rec)]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


@pytest.mark.parametrize("name", ["escapes", "markup", "empty", "many"])
def test_the_parts_make_the_whole_report(advices: dict[str, Advice], name: str) -> None:
    a = advices[name]
    text = "".join(json_parts(a))
    assert text == _whole_json(a)
    assert json.loads(text) == to_json(a)
    assert "".join(markdown_parts(a)) == _whole_markdown(a)
    assert (name == "empty") == (not a.findings)


def _peak(parts: Iterable[str]) -> tuple[int, int]:
    """tracemalloc's peak while `parts` are made and dropped, and their length."""
    tracemalloc.start()
    try:
        size = sum(len(p) for p in parts)
        return tracemalloc.get_traced_memory()[1], size
    finally:
        tracemalloc.stop()


def test_writing_holds_a_few_findings_not_the_report(advices: dict[str, Advice]) -> None:
    a = advices["many"]
    peak, size = _peak(json_parts(a))
    assert size > 1_000_000
    assert peak < size / 10, (peak, size)
    peak, size = _peak(markdown_parts(a))
    assert peak < size / 10, (peak, size)
    whole, _ = _peak(_whole_json(a) for _ in (1,))  # the bound is one the whole text does not meet
    assert whole > size


def test_output_file_is_stdout(tmp_path: Path) -> None:
    db, project = make_store_sync("escapes", tmp_path / "s")
    for form in (["--json"], ["--format", "md"]):
        base = [sys.executable, "-m", "zymi_tui", "advise", str(db), "--project", str(project), *form]
        shown = subprocess.run(base, capture_output=True, check=True).stdout
        written = tmp_path / "out"
        subprocess.run([*base, "-o", str(written)], capture_output=True, check=True)
        assert written.read_bytes() == shown
