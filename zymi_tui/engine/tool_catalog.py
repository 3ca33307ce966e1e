"""The tool catalog (docs/engine.md#tool-dispatch): the built-in tools' definitions, the `tools` array
an agent's requests carry, and how a call maps to an intention (zymi's tool_catalog.rs).

Pure functions of the project's configuration: the request bodies, `advise` and the screens read them
without loading the dispatcher (`tools.py`: the gate, approvals, the shell).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from zymi_tui.engine.config import ShellImpl, ToolConfig

BUILTIN_DEFINITIONS: dict[str, dict[str, Any]] = {
    "execute_shell_command": {
        "description": "Execute a shell command on the host",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The shell command to run"},
                "timeout_secs": {"type": "integer", "description": "Timeout in seconds (default 30)"},
            },
            "required": ["command"],
        },
    },
    "write_file": {
        "description": "Write content to a file",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Relative path from project root"},
                "content": {"type": "string", "description": "File content to write"},
            },
            "required": ["path", "content"],
        },
    },
    "read_file": {
        "description": "Read a file's contents",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Relative path from project root"}},
            "required": ["path"],
        },
    },
    "write_memory": {
        "description": "Store a key-value pair in the agent's memory",
        "parameters": {
            "type": "object",
            "properties": {
                "key": {"type": "string", "description": "Memory key"},
                "content": {"type": "string", "description": "Content to store"},
            },
            "required": ["key", "content"],
        },
    },
    "spawn_sub_agent": {
        "description": "Spawn a sub-agent to handle a subtask",
        "parameters": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Sub-agent name"},
                "task": {"type": "string", "description": "Task description for the sub-agent"},
            },
            "required": ["name", "task"],
        },
    },
}


def tool_definitions(names: list[str], declared: dict[str, ToolConfig]) -> list[dict[str, Any]]:
    """OpenAI `tools` array for an agent, in its `tools:` order; unknown names dropped."""
    out = []
    for name in names:
        if name in BUILTIN_DEFINITIONS:
            d = BUILTIN_DEFINITIONS[name]
            out.append({"name": name, "description": d["description"], "parameters": d["parameters"]})
        elif name in declared:
            t = declared[name]
            out.append({"name": name, "description": t.description, "parameters": t.parameters})
    return out


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _str(args: dict[str, Any], key: str) -> str:
    v = args.get(key)
    return v if isinstance(v, str) else ""


def splice_args(template: str, arguments: str, *, mode: str = "raw") -> str:
    """`${args.X}`: strings verbatim, other JSON values as JSON text; url/json modes escape."""
    args = _args(arguments)

    def value(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        if key not in args:
            return m.group(0)
        v = args[key]
        text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        if mode == "url":
            return quote(text, safe="")
        if mode == "json":
            return json.dumps(text, ensure_ascii=False)[1:-1]
        return text

    return re.sub(r"\$\{\s*args\.([^}]+)\}", value, template)


def intention(name: str, arguments: str, declared: dict[str, ToolConfig]) -> tuple[str, dict[str, Any]]:
    """(tag, {"type": ..., "data": ...}) as the catalog maps a call."""
    a = _args(arguments)
    if name == "execute_shell_command":
        t = a.get("timeout_secs")
        timeout = t if isinstance(t, int) and not isinstance(t, bool) and t >= 0 else None
        return name, {"type": "ExecuteShellCommand", "data": {"command": _str(a, "command"), "timeout_secs": timeout}}
    if name == "write_file":
        return name, {"type": "WriteFile", "data": {"path": _str(a, "path"), "content": _str(a, "content")}}
    if name == "read_file":
        return name, {"type": "ReadFile", "data": {"path": _str(a, "path")}}
    if name == "write_memory":
        return name, {"type": "WriteMemory", "data": {"key": _str(a, "key"), "content": _str(a, "content")}}
    if name == "spawn_sub_agent":
        return name, {"type": "SpawnSubAgent", "data": {"name": _str(a, "name"), "task": _str(a, "task")}}
    tool = declared.get(name)
    if tool is not None and isinstance(tool.implementation, ShellImpl):
        impl = tool.implementation
        command = splice_args(impl.command_template, arguments)
        return "execute_shell_command", {
            "type": "ExecuteShellCommand",
            "data": {"command": command, "timeout_secs": impl.timeout_secs},
        }
    return "call_custom_tool", {"type": "CallCustomTool", "data": {"tool_name": name, "arguments": arguments}}


def definition_bytes(name: str) -> int | None:
    """A built-in tool's definition as the request's `tools` carries it (JSON bytes); None: not built in."""
    d = BUILTIN_DEFINITIONS.get(name)
    if d is None:
        return None
    wire = {
        "type": "function",
        "function": {"name": name, "description": d["description"], "parameters": d["parameters"]},
    }
    return len(json.dumps(wire, ensure_ascii=False).encode())
