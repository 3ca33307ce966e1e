"""LHAR lines are assembled from parts (telemetry/lhar_entry.py, lhar_body.py): each must still be the
text `json.dumps(line, ensure_ascii=False)` writes, on stores whose texts hold what people's do (terminal
escapes, NUL, RTL and emoji, markup), with and without the project's request bodies; and a message's JSON
in those bodies is made once per conversation, not once per call that resends it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import zymi_tui.context.rendered
import zymi_tui.events.messages
import zymi_tui.telemetry.lhar_export
from tests.conftest import ORACLE, zymi_tui_bin
from tests.hostile_stores import ESCAPES, MARKUP, NUL, UNICODE, make_store_sync
from zymi_tui.cli import main
from zymi_tui.events.messages import MessageModel

TEXTS = {"markup": MARKUP, "escapes": ESCAPES, "unicode": UNICODE, "nul": NUL}


def _export(db: Path, project: Path | None, out: Path) -> list[Path]:
    args = [zymi_tui_bin(), "export", str(db), "--format", "lhar", "-o", f"{out}/"]
    proc = subprocess.run(args + (["--project", str(project)] if project else []), capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode()
    return sorted(out.iterdir())


@pytest.mark.parametrize("with_project", [True, False], ids=["project", "bare"])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_lhar_lines_are_the_text_json_dumps_writes(name: str, with_project: bool, tmp_path: Path) -> None:
    db, project = make_store_sync(name, tmp_path / "store")
    if not with_project:  # beside its project, the store is found with it
        alone = tmp_path / "alone"
        alone.mkdir()
        db, project = Path(shutil.copy(db, alone / "events.db")), None
    entries = 0
    held = ""
    for f in _export(db, project, tmp_path / "out"):
        text = f.read_bytes().decode("utf-8")
        held += text
        for line in text.splitlines(keepends=True):
            doc = json.loads(line)
            assert line == json.dumps(doc, ensure_ascii=False) + "\n"
            if doc["type"] == "entry":
                entries += 1
                body = doc["raw"]["request_body"]
                assert (body is not None) == with_project
                sent = len(json.dumps(body, ensure_ascii=False).encode()) if body is not None else 0
                assert doc["transfer"]["request_bytes"] == sent
    assert entries > 0
    assert json.dumps(TEXTS[name], ensure_ascii=False)[1:-1] in held  # the store's texts went through the escaping


@pytest.mark.parametrize("store", ["coding_default", "coding_compaction", "chat_profile"])
def test_a_message_json_is_made_once_per_conversation(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[MessageModel] = []
    wire = zymi_tui.events.messages.to_wire

    def counted(m: MessageModel) -> dict[str, object]:
        made.append(m)
        return wire(m)

    for module in (zymi_tui.events.messages, zymi_tui.context.rendered, zymi_tui.telemetry.lhar_figures):
        if hasattr(module, "to_wire"):
            monkeypatch.setattr(module, "to_wire", counted)
    out = tmp_path / "out"
    db, project = ORACLE / store / "events.db", ORACLE / store / "project"
    assert main(["export", str(db), "--project", str(project), "--format", "lhar", "-o", f"{out}/"]) == 0
    sent, distinct, anywhere = 0, 0, set()
    for f in out.iterdir():
        bodies = [d["raw"]["request_body"] for d in map(json.loads, f.read_text(encoding="utf-8").splitlines())
                  if d["type"] == "entry"]  # fmt: skip
        sent += sum(len(b["messages"]) for b in bodies)
        texts = {json.dumps(m) for b in bodies for m in b["messages"]}
        distinct += len(texts)
        anywhere |= texts
    assert sent > 2 * distinct  # calls resend their step's messages: the test means something
    # each message sent made once per conversation at most (a system prompt may serve several)
    assert len(anywhere) <= len(made) <= distinct
