"""`zymi-tui init`: a new project that runs at once, on the offline demo model."""

from __future__ import annotations

from pathlib import Path

from zymi_tui.engine.gitignore import ensure_gitignore
from zymi_tui.engine.providers.demo_workspace import write_demo_project
from zymi_tui.project.errors import ProjectError

PROJECT = """name: {name}
version: "0.1"

# The offline demo model: deterministic, no network, no key. Replace with a real provider, e.g.
#   llm: {{provider: openai, model: gpt-4o-mini, api_key: ${{env.OPENAI_API_KEY}}}}
llm:
  provider: demo
  model: demo

defaults:
  timeout_secs: 30
  max_iterations: 10

policy:
  enabled: true
  allow: ["ls *", "cat *", "echo *", "wc *", "head *", "grep *"]
  deny: ["rm -rf *"]

contracts:
  file_write:
    allowed_dirs: ["./output", "./memory"]
    deny_patterns: ["*.env", "*.key"]

# runtime:
#   context:
#     observation_window: 10
#     soft_cap_chars: 400000
#     hard_cap_chars: 600000
#     min_tail_turns: 4
#     forget_after_turns: null
"""

AGENT = """name: default
description: "Default agent for {name}"
tools:
  - read_file
  - execute_shell_command
  - write_memory
max_iterations: 10
"""

PIPELINE = """name: main
description: Main pipeline

inputs:
  - name: task
    required: true

steps:
  - id: process
    agent: default
    task: "${inputs.task}"

output:
  step: process
"""


def init_project(root: Path, name: str | None, example: str | None) -> list[str]:
    """Write the scaffold into `root`; returns the files written."""
    if (root / "project.yml").exists():
        raise ProjectError("project.yml already exists — this directory is already a zymi project")
    if example not in (None, "demo"):
        raise ProjectError(f"unknown example '{example}'. Available: demo")
    if example == "demo":
        return write_demo_project(root, name or root.name)
    project_name = name or root.name
    files = {
        "project.yml": PROJECT.format(name=project_name),
        "agents/default.yml": AGENT.format(name=project_name),
        "pipelines/main.yml": PIPELINE,
    }
    for d in ("agents", "pipelines", "tools", ".zymi"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    ensure_gitignore(root)
    return [*files, ".gitignore"]
