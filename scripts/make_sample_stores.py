#!/usr/bin/env python3
"""Regenerate sample_stores/ (and the copy shipped in zymi_tui/data/sample/) with our engine and the demo model.

    .venv/bin/python scripts/make_sample_stores.py

Each store is made in a fresh demo project (`zymi-tui init --example demo`) with its own context knobs,
then copied (SQLite backup, no WAL) beside the project.yml, agents/ and pipelines/ it was made with:
  coding_long   one long coding run (masking, then compactions) under coding-like knobs
  chat_session  a chat of many runs on one stream under the chat profile: forgetting and a compaction
  hard_cap      a run whose context outgrows the hard cap after compacting: the step fails
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from zymi_tui.engine.approvals import DenyAll  # noqa: E402
from zymi_tui.engine.chat import chat_pipeline, send  # noqa: E402
from zymi_tui.engine.loader import load_workspace  # noqa: E402
from zymi_tui.engine.providers.demo_workspace import write_demo_project  # noqa: E402
from zymi_tui.engine.runner import RunHalted, run_pipeline  # noqa: E402
from zymi_tui.engine.runtime import close_runtime, open_runtime  # noqa: E402

OUT = ROOT / "sample_stores"
SHIPPED = ROOT / "zymi_tui" / "data" / "sample"
SHIP = "chat_session"

KNOBS = {
    "coding_long": "observation_window: 10\n    soft_cap_chars: 30000\n    hard_cap_chars: 120000\n"
    "    min_tail_turns: 4\n    forget_after_turns: null",
    "chat_session": "observation_window: 2\n    soft_cap_chars: 40000\n    hard_cap_chars: 80000\n"
    "    min_tail_turns: 2\n    forget_after_turns: 12",
    "hard_cap": "observation_window: 10\n    soft_cap_chars: 4000\n    hard_cap_chars: 8000\n"
    "    min_tail_turns: 2\n    forget_after_turns: null",
}

CHAT = [
    "Hi! What is in this code base?",
    "What does billing do?",
    "And the ledger module?",
    "Are there TODOs in invoices?",
    "Tell me about customers and auth.",
    "Thanks. What about reports?",
    "Show me everything at once.",
    "What did you find in storage?",
    "Let us look at scheduler and mailer.",
    "Any rounding issues in search?",
    "Summarise what you know so far.",
    "One more look at billing, please.",
    "Bye for now!",
]


def make_project(root: Path, name: str) -> Path:
    write_demo_project(root, name)
    project = root / "project.yml"
    text = project.read_text(encoding="utf-8")
    head, _, _ = text.partition("runtime:\n")
    project.write_text(head + "runtime:\n  context:\n    " + KNOBS[name] + "\n", encoding="utf-8")
    return root


async def produce(name: str, root: Path) -> None:
    ws = load_workspace(root)
    pipelines = ["chat"] if name == "chat_session" else ["main"]
    rt = await open_runtime(ws, pipelines, DenyAll())
    try:
        if name == "chat_session":
            pipeline, input_name = chat_pipeline(ws, "chat")
            for text in CHAT:
                await send(rt, pipeline, input_name, "chat-demo", text)
        else:
            task = (
                "Audit every module of the shop: read all of them and report the TODOs."
                if name == "coding_long"
                else "Read all modules one by one until the context budget runs out."
            )
            try:
                await run_pipeline(rt, "main", {"task": task})
            except RunHalted as e:
                print(f"  {name}: run halted as intended: {e}")
    finally:
        await close_runtime(rt)


def copy_out(name: str, root: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "project").mkdir(parents=True)
    src = sqlite3.connect(f"file:{root / '.zymi' / 'events.db'}?mode=ro", uri=True)
    dst = sqlite3.connect(dest / "events.db")
    src.backup(dst)
    dst.execute("PRAGMA journal_mode=DELETE")
    dst.commit()
    dst.execute("VACUUM")
    dst.close()
    src.close()
    shutil.copy(root / "project.yml", dest / "project" / "project.yml")
    for folder in ("agents", "pipelines"):
        shutil.copytree(root / folder, dest / "project" / folder)


def main() -> int:
    for name in KNOBS:
        with tempfile.TemporaryDirectory() as tmp:
            root = make_project(Path(tmp) / name, name)
            asyncio.run(produce(name, root))
            copy_out(name, root, OUT / name)
            if name == SHIP:
                copy_out(name, root, SHIPPED / name)
        con = sqlite3.connect(OUT / name / "events.db")
        kinds = dict(con.execute("SELECT kind_tag, COUNT(*) FROM events GROUP BY kind_tag").fetchall())
        con.close()
        print(
            f"{name:13s} events={sum(kinds.values()):4d} llm_calls={kinds.get('llm_call_started', 0):3d} "
            f"compactions={kinds.get('context_compacted', 0):2d} runs={kinds.get('pipeline_completed', 0)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
