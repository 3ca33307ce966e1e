"""The offline demo model (`llm: {provider: demo}`): deterministic, no network, no key.

It plays a believable agent over the demo workspace: lists the files, reads them, greps, writes
memory notes, then answers. Its plan depends only on the task text, so a run is reproducible.
The more the task asks for ("all", "every", "audit"), the more it reads ("everything at once"
cats every module in one call), so a chat or a run grows its context the way a real one does.
Compaction requests get a summary built from the span. Every answer starts with `[demo model]`.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from zymi_tui.engine.providers.base import LlmRequest, LlmResponse
from zymi_tui.engine.providers.demo_workspace import MODULES
from zymi_tui.events.messages import TokenUsage, ToolCallInfo

LABEL = "[demo model]"
LONG_WORDS = ("all", "every", "audit", "long", "whole", "все", "всё")


def _tokens(text: str) -> int:
    return max(1, len(text.encode("utf-8")) // 4)


def plan_for(task: str) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the demo agent makes for a task, in order (then it answers)."""
    digest = int(hashlib.sha1(task.encode("utf-8")).hexdigest(), 16)
    words = re.findall(r"\w+", task.lower())
    long = any(w in LONG_WORDS for w in words)
    count = len(MODULES) if long else 2 + digest % 3
    start = digest % len(MODULES)
    mods = [MODULES[(start + k) % len(MODULES)] for k in range(count)]
    named = [m for m in MODULES if m in words]
    mods = named + [m for m in mods if m not in named]
    plan: list[tuple[str, dict[str, Any]]] = [("execute_shell_command", {"command": "ls workspace/src workspace/docs"})]
    if "once" in words or "everything" in words:
        plan.append(("execute_shell_command", {"command": "cat workspace/src/*.py"}))
        return plan
    for k, m in enumerate(mods):
        plan.append(("read_file", {"path": f"workspace/src/{m}.py"}))
        if long or k % 3 == 2:
            plan.append(("execute_shell_command", {"command": f"grep -n TODO workspace/src/{m}.py"}))
        if k % 4 == 3:
            plan.append(("write_memory", {"key": f"note_{m}", "content": f"{m}: read, has TODOs to review"}))
    if long:
        plan.append(("read_file", {"path": "workspace/docs/architecture.md"}))
        plan.append(("execute_shell_command", {"command": "wc -l workspace/src/billing.py workspace/src/ledger.py"}))
    plan.append(("write_memory", {"key": "last_task", "content": task[:120]}))
    return plan


class DemoProvider:
    name = "demo"

    def __init__(self, model: str = "demo") -> None:
        self.model = model
        self._progress: dict[str, int] = {}
        self._calls = 0

    def _usage(self, request: LlmRequest, out: str) -> TokenUsage:
        sent = sum(_tokens(str(m.get("content") or "")) for m in request.messages)
        return TokenUsage(input_tokens=sent, output_tokens=_tokens(out), cached_input_tokens=sent // 2)

    def _compaction(self, request: LlmRequest) -> LlmResponse:
        span = str(request.messages[-1].get("content") or "")
        reads = sorted(set(re.findall(r"read_file\(\"([^\"]+)\"\)", span)))
        results = span.count("Tool result:")
        errors = span.count("→ error")
        text = (
            f"{LABEL} Summary of an earlier span: the agent made {results} tool calls"
            + (f", reading {', '.join(reads[:6])}" if reads else "")
            + f"; {errors} of them failed. It decided to keep reviewing the remaining modules."
        )
        return LlmResponse(text, [], self._usage(request, text), "stop")

    async def complete(self, request: LlmRequest) -> LlmResponse:
        self._calls += 1
        first_system = next((m.get("content") for m in request.messages if m.get("role") == "system"), "") or ""
        if first_system.startswith("You are compressing"):
            return self._compaction(request)
        task = next((str(m.get("content") or "") for m in request.messages if m.get("role") == "user"), "")
        tools = {t["name"] for t in request.tools}
        key = hashlib.sha1((first_system + "\x00" + task).encode("utf-8")).hexdigest()
        plan = [(n, a) for n, a in plan_for(task) if n in tools]
        step = self._progress.get(key, 0)
        if step < len(plan):
            self._progress[key] = step + 1
            name, args = plan[step]
            thought = f"{LABEL} Next I will call {name} on {next(iter(args.values()))}."
            call = ToolCallInfo(id=f"demo_{self._calls}", name=name, arguments=json.dumps(args, ensure_ascii=False))
            return LlmResponse(thought, [call], self._usage(request, thought), "tool_calls")
        self._progress.pop(key, None)
        seen = [str(m.get("content") or "") for m in request.messages if m.get("role") == "tool"]
        failed = sum(c.startswith(("[tool error]", "[denied", "[rejected", "[requires approval")) for c in seen)
        finding = (
            "the modules follow one pattern (scale and shift) and a few carry TODOs about rounding."
            if failed < len(seen) or not seen
            else "every call failed: this project has no demo workspace (try `zymi-tui init --example demo`)."
        )
        text = (
            f"{LABEL} Done with: {task[:80]}. I looked at {len(seen)} tool results still in my context "
            f"({failed} failed); {finding} Nothing here came from a real model."
        )
        return LlmResponse(text, [], self._usage(request, text), "stop")
