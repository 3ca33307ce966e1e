"""prefix_reuse_messages of every recorded agent call equals the count computed from the request
bodies the real engine sent (zymi's `[memory]` lines compared as a set: their order is random)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ORACLE, SCENARIOS, zymi_tui_bin


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def norm(m: dict[str, Any]) -> Any:
        content = m.get("content")
        if m.get("role") == "system" and isinstance(content, str) and content.startswith("[memory]\n"):
            return ("memory", frozenset(content.splitlines()))
        return json.dumps(m, sort_keys=True)

    return bool(norm(a) == norm(b))


def reuse_from_bodies(scenario: Path, *, breaks: bool = False) -> dict[tuple[str, int], int]:
    """(stream, sequence) of every agent call -> leading messages equal to the stream's previous agent call's
    (`breaks`: 1 where the call does not begin with the previous call's whole list, else 0)."""
    bodies = {}
    for line in (scenario / "requests.jsonl").read_text(encoding="utf-8").splitlines():
        req = json.loads(line)
        bodies[req["n"]] = req["body"]["messages"]
    previous: dict[str, list[dict[str, Any]]] = {}
    out: dict[tuple[str, int], int] = {}
    for call in json.loads((scenario / "expected.json").read_text(encoding="utf-8")):
        if call["request_kind"] != "agent":
            continue
        msgs = bodies[call["request_n"]]
        prev = previous.get(call["stream_id"])
        n = 0
        if prev is not None:
            while n < min(len(prev), len(msgs)) and _same(prev[n], msgs[n]):
                n += 1
        out[(call["stream_id"], call["sequence"])] = int(prev is not None and n < len(prev)) if breaks else n
        previous[call["stream_id"]] = msgs
    return out


RECORDED = [s for s in SCENARIOS if (ORACLE / s / "requests.jsonl").is_file()]


@pytest.mark.parametrize("scenario", RECORDED)
def test_prefix_reuse_matches_request_bodies(scenario: str) -> None:
    folder = ORACLE / scenario
    expected = reuse_from_bodies(folder)
    assert expected, "the scenario has agent calls"
    proc = subprocess.run(
        [zymi_tui_bin(), "replay", str(folder / "events.db"), "--project", str(folder / "project"), "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    got = {(r["stream_id"], r["sequence"]): r["prefix_reuse_messages"] for r in rows if r.get("kind") == "agent"}
    assert got == expected
    for r in rows:
        if r.get("kind") == "compaction":
            assert r["prefix_reuse_messages"] is None


@pytest.mark.parametrize("scenario", RECORDED)
def test_cache_breaks_match_request_bodies(scenario: str) -> None:
    """A break is a call that does not begin with the previous call's whole message list, as sent (on
    `memory`, seq 5 adds the [memory] block after a previous call that was Layer A only: no break)."""
    folder = ORACLE / scenario
    expected = reuse_from_bodies(folder, breaks=True)
    proc = subprocess.run(
        [zymi_tui_bin(), "replay", str(folder / "events.db"), "--project", str(folder / "project"), "--json"],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    got = {
        (r["stream_id"], r["sequence"]): int(r["prefix_break"] is not None) for r in rows if r.get("kind") == "agent"
    }
    assert got == expected
    assert rows[-1]["cache_breaks"] == sum(expected.values())
