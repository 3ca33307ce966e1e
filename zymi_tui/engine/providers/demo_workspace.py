"""The demo project `zymi-tui init --example demo` writes: a small code base for the demo model to explore."""

from __future__ import annotations

from pathlib import Path

from zymi_tui.engine.gitignore import ensure_gitignore

PROJECT = """name: {name}
version: "0.1"

# zymi-tui's offline demo model: deterministic, no network, no API key. Everything it says is
# labelled as the demo model's. For a real model: llm: {{provider: openai, model: gpt-4o-mini,
# api_key: ${{env.OPENAI_API_KEY}}}}
llm:
  provider: demo
  model: demo

defaults:
  timeout_secs: 30
  max_iterations: 40

policy:
  enabled: true
  allow: ["ls *", "cat *", "wc *", "grep *", "head *", "tail *", "echo *", "find *"]
  deny: ["rm -rf *"]

contracts:
  file_write:
    allowed_dirs: ["./output"]

# Small caps so masking, forgetting and compaction show within a few minutes of chatting.
runtime:
  context:
    observation_window: 4
    soft_cap_chars: 24000
    hard_cap_chars: 60000
    min_tail_turns: 3
    forget_after_turns: 24
"""

AGENT = """name: {name}
description: "{description}"
system_prompt: "{prompt}"
tools:
  - read_file
  - execute_shell_command
  - write_memory
max_iterations: 40
"""

CHAT = """name: chat
description: "Chat with the demo agent; every message of one stream remembers the earlier ones"
inputs:
  - name: message
    required: true
steps:
  - id: reply
    agent: assistant
    task: "${inputs.message}"
output:
  step: reply
"""

MAIN = """name: main
description: "One coding task for the demo agent"
inputs:
  - name: task
    required: true
steps:
  - id: work
    agent: coder
    task: "${inputs.task}"
output:
  step: work
"""

MODULES = ["billing", "invoices", "customers", "ledger", "reports", "auth", "storage", "scheduler", "mailer", "search"]


def _module(name: str, i: int) -> str:
    lines = [f'"""The {name} module of the demo shop."""', "", "from __future__ import annotations", ""]
    for j in range(8 + 5 * i):
        lines += [
            f"def {name}_step_{j}(value: int) -> int:",
            f'    """Step {j} of {name}: scales and shifts."""',
            f"    # TODO: check the {name} rounding rule" if (i + j) % 7 == 0 else f"    total = value * {j + 2}",
            f"    return value * {j + 2} + {i}",
            "",
        ]
    return "\n".join(lines) + "\n"


def demo_files() -> dict[str, str]:
    files = {f"workspace/src/{m}.py": _module(m, i) for i, m in enumerate(MODULES)}
    files["workspace/README.md"] = (
        "# Demo shop\n\nA small code base for the zymi-tui demo model to explore: ten modules under src/, "
        "notes under docs/.\n"
    )
    files["workspace/docs/architecture.md"] = "".join(
        f"## {m}\n\nThe {m} module depends on {MODULES[(i + 1) % len(MODULES)]}; it keeps its state in memory.\n\n"
        for i, m in enumerate(MODULES)
    )
    files["workspace/docs/todo.md"] = "".join(f"- review {m}: rounding, errors, tests\n" for m in MODULES)
    return files


def write_demo_project(root: Path, name: str) -> list[str]:
    files = {
        "project.yml": PROJECT.format(name=name),
        "agents/assistant.yml": AGENT.format(
            name="assistant",
            description="The demo chat assistant",
            prompt="You are a helpful assistant for the demo shop code base in workspace/. Answer briefly.",
        ),
        "agents/coder.yml": AGENT.format(
            name="coder",
            description="The demo coding agent",
            prompt="You are a careful coding agent. Inspect the files under workspace/ and report.",
        ),
        "pipelines/chat.yml": CHAT,
        "pipelines/main.yml": MAIN,
        **demo_files(),
    }
    for d in ("agents", "pipelines", "tools", ".zymi"):
        (root / d).mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    ensure_gitignore(root)
    return [*files, ".gitignore"]
