"""The tool catalog and dispatcher (docs/engine.md#tool-dispatch): intentions, the gate, approvals, execution.

Every tool call of an agent or tool step goes through `ToolRunner.call`, which writes the
`IntentionEmitted` / `IntentionEvaluated` / approval events and returns `(result, is_error)` with
zymi's exact strings and prefixes. Nothing executes unless the gate (or a human) allowed it.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from pathlib import Path
from typing import Any

from zymi_tui.context.masking import is_tool_error
from zymi_tui.engine.approvals import ApprovalHandler
from zymi_tui.engine.config import HttpImpl, ShellImpl, ShellRuntime, ToolConfig
from zymi_tui.engine.nofollow import FolderError, LinkOnTheWay, open_judged
from zymi_tui.engine.policy import APPROVED, Contracts, Verdict
from zymi_tui.engine.recorder import Recorder
from zymi_tui.engine.run_scope import RunScope as RunScope  # re-exported: its home before run_scope.py
from zymi_tui.engine.sandbox import Sandbox
from zymi_tui.engine.shell import MAX_OUTPUT, ShellError, ShellSession
from zymi_tui.engine.tool_catalog import intention, splice_args
from zymi_tui.events.kinds import (
    ApprovalDenied,
    ApprovalGranted,
    ApprovalRequested,
    IntentionEmitted,
    IntentionEvaluated,
    MemoryWritten,
    ShellSessionClosed,
    ShellSessionStarted,
)
from zymi_tui.events.sqlite_file import keep_if_store_file

U64_MAX = 2**64 - 1


class ToolFailure(Exception):
    """An `Err(e)` of a tool: reported as `[tool error] <e>`."""


def _size_error(what: str, size: int) -> str:
    return (
        f"{what} is {size / (1024 * 1024):.1f} MB — over the 1 MB limit for one tool result. "
        "Narrow it (grep / head / tail / jq), or write it to a file and read the part you need"
    )


def _for_error(text: str) -> str:
    size = len(text.encode("utf-8"))
    return text if size <= MAX_OUTPUT else f"({size / (1024 * 1024):.1f} MB, omitted)"


def _os_error(e: OSError) -> str:
    return f"{e.strerror} (os error {e.errno})" if e.errno else str(e)


class ToolRunner:
    def __init__(
        self,
        root: Path,
        contracts: Contracts,
        declared: dict[str, ToolConfig],
        recorder: Recorder,
        approvals: ApprovalHandler | None,
        shell_config: ShellRuntime,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.root = root
        self.contracts = contracts
        self.declared = declared
        self.recorder = recorder
        self.approvals = approvals
        self.shell_config = shell_config
        self.sandbox = sandbox or Sandbox((), "")

    # -- the gate ------------------------------------------------------------------------------
    def _verdict(self, tag: str, data: dict[str, Any], name: str, scope: RunScope) -> Verdict:
        body = data["data"]
        if data["type"] == "ExecuteShellCommand":
            shell = scope.shell
            cwd = shell.cwd() if shell is not None and shell.proc.returncode is None else None
            verdict = self.contracts.shell_command(body["command"], cwd)
        elif data["type"] == "WriteFile":
            verdict = self.contracts.write_file(body["path"])
        elif data["type"] == "ReadFile":
            verdict = self.contracts.read_file(body["path"])
        elif data["type"] == "SpawnSubAgent":
            verdict = Verdict("requires_approval", "Sub-agent spawn requires approval")
        else:
            verdict = APPROVED
        tool = self.declared.get(name)
        if verdict.kind == "approved" and tool is not None and tool.requires_approval is True:
            verdict = Verdict("requires_approval", f"tool '{name}' is marked requires_approval: true")
        return verdict

    async def _ask_human(self, scope: RunScope, reason: str, explanation: str | None = None) -> str | None:
        """None if granted, else the result text of a refusal."""
        rec, corr = self.recorder, scope.correlation_id
        approval_id = str(uuid.uuid4())
        channel = self.approvals.channel if self.approvals else "<none>"
        await rec.emit(
            scope.stream_id,
            ApprovalRequested(
                approval_id=approval_id,
                stream_id=scope.stream_id,
                description=reason,
                explanation=explanation,
                channel=channel,
            ),
            "orchestrator",
            corr,
        )
        if self.approvals is None:
            await rec.emit(
                scope.stream_id,
                ApprovalDenied(
                    approval_id=approval_id, stream_id=scope.stream_id, decided_by="orchestrator",
                    reason="no_approval_channel",
                ),
                "orchestrator",
                corr,
            )  # fmt: skip
            return "[requires approval but no approval handler configured]"
        try:
            decision = await asyncio.wait_for(self.approvals.decide(reason, explanation), 300)
        except TimeoutError:
            await rec.emit(
                scope.stream_id,
                ApprovalDenied(
                    approval_id=approval_id, stream_id=scope.stream_id, decided_by="orchestrator", reason="timeout"
                ),
                "orchestrator",
                corr,
            )
            return "[rejected by human]"
        kind = ApprovalGranted if decision.granted else ApprovalDenied
        await rec.emit(
            scope.stream_id,
            kind(
                approval_id=approval_id,
                stream_id=scope.stream_id,
                decided_by=decision.decided_by,
                reason=decision.reason,
            ),
            "approval_channel",
            corr,
        )
        return None if decision.granted else "[rejected by human]"

    async def call(self, scope: RunScope, name: str, arguments: str) -> tuple[str, bool]:
        """Gate and run one tool call; `(result, is_error)` as zymi reports it."""
        tag, data = intention(name, arguments, self.declared)
        rec, corr = self.recorder, scope.correlation_id
        await rec.emit(
            scope.stream_id,
            IntentionEmitted(
                intention_tag=tag, intention_data=json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            ),
            "orchestrator",
            corr,
        )
        verdict = self._verdict(tag, data, name, scope)
        await rec.emit(
            scope.stream_id, IntentionEvaluated(intention_tag=tag, verdict=verdict.text()), "orchestrator", corr
        )
        if verdict.kind == "denied":
            result = f"[denied by policy] {verdict.reason}"
        else:
            asks = verdict.kind == "requires_approval"
            refusal = await self._ask_human(scope, verdict.reason, verdict.why or None) if asks else None
            if refusal is not None:
                result = refusal
            else:
                try:
                    result = await self.execute(scope, name, arguments, data, verdict.target)
                except ToolFailure as e:
                    result = f"[tool error] {e}"
        return result, is_tool_error(result)

    # -- execution -----------------------------------------------------------------------------
    async def execute(
        self, scope: RunScope, name: str, arguments: str, data: dict[str, Any], target: Path | None = None
    ) -> str:
        """Run one gated tool call; `target`: the real file a read_file or write_file verdict judged."""
        tool = self.declared.get(name)
        if tool is not None:
            if isinstance(tool.implementation, ShellImpl):
                body = data["data"]
                return await self._shell(scope, body["command"], body["timeout_secs"] or 30)
            return await self._http(tool.implementation, arguments)
        if name not in ("execute_shell_command", "read_file", "write_file", "write_memory", "read_memory"):
            raise ToolFailure(f"unknown built-in tool: {name}")
        try:
            args = json.loads(arguments)
        except ValueError as e:
            msg = getattr(e, "msg", str(e))
            line, col = getattr(e, "lineno", 1), getattr(e, "colno", 1)
            raise ToolFailure(f"invalid tool arguments JSON: {msg} at line {line} column {col}") from None

        def need(key: str) -> str:
            v = args.get(key) if isinstance(args, dict) else None
            if not isinstance(v, str):
                raise ToolFailure(f"missing '{key}' argument")
            return v

        if name == "execute_shell_command":
            command = need("command")
            t = args.get("timeout_secs")
            timeout = t if isinstance(t, int) and not isinstance(t, bool) and t >= 0 else 30
            return await self._shell(scope, command, timeout)
        if name == "read_file":
            return self._read(need("path"), target)
        if name == "write_file":
            return self._write(need("path"), need("content"), target)
        if name == "read_memory":
            key = need("key")
            return scope.memory.get(key, f"[memory key '{key}' not found]")
        key, content = need("key"), need("content")
        previous = U64_MAX if key in scope.memory else None
        await self.recorder.emit(
            scope.stream_id,
            MemoryWritten(key=key, value=content, previous_value_seq=previous),
            "agent",
            scope.correlation_id,
        )
        scope.memory[key] = content
        return f"Stored memory key '{key}'"

    def _read(self, path: str, target: Path | None) -> str:
        """Read the file the verdict judged (`target`), never through a link put on the way since."""
        full = self.root / path
        judged = target or self.contracts.resolve(path)
        if judged is None:
            raise ToolFailure(f"failed to read {full}: unresolvable path")
        try:
            fd = open_judged(judged, os.O_RDONLY)
            with open(fd, encoding="utf-8", closefd=not keep_if_store_file(fd)) as f:
                content = f.read()
        except LinkOnTheWay as e:
            raise ToolFailure(f"failed to read {full}: {e.strerror}") from None
        except OSError as e:  # FolderError too: a folder on the way missing or not one
            raise ToolFailure(f"failed to read {full}: {_os_error(e)}") from None
        except UnicodeDecodeError:
            raise ToolFailure(f"failed to read {full}: stream did not contain valid UTF-8") from None
        size = len(content.encode("utf-8"))
        if size > MAX_OUTPUT:
            raise ToolFailure(_size_error(f"{path} ({size} bytes)", size))
        return content

    def _write(self, path: str, content: str, target: Path | None) -> str:
        """Write where the verdict looked (`target`), never through a link put on the way since."""
        full = self.root / path
        judged = target or self.contracts.resolve(path)
        if judged is None:
            raise ToolFailure(f"failed to write {full}: unresolvable path")
        try:
            fd = open_judged(judged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, make_folders=True)
        except LinkOnTheWay as e:
            raise ToolFailure(f"failed to write {full}: {e.strerror}") from None
        except FolderError as e:
            raise ToolFailure(f"failed to create directories: {_os_error(e)}") from None
        except OSError as e:
            raise ToolFailure(f"failed to write {full}: {_os_error(e)}") from None
        try:
            with open(fd, "w", encoding="utf-8", closefd=not keep_if_store_file(fd)) as f:
                f.write(content)
        except OSError as e:
            raise ToolFailure(f"failed to write {full}: {_os_error(e)}") from None
        return f"Written {len(content.encode('utf-8'))} bytes to {path}"

    async def _shell(self, scope: RunScope, command: str, timeout: int) -> str:
        async with scope.shell_lock:
            if scope.shell is None or scope.shell.proc.returncode is not None:
                try:
                    scope.shell = await ShellSession.start(self.shell_config, self.root, self.sandbox.prefix)
                except ShellError as e:
                    raise ToolFailure(f"shell session error: {e}") from None
                except OSError as e:
                    raise ToolFailure(f"shell session error: {_os_error(e)}") from None
                await self.recorder.emit(
                    scope.stream_id,
                    ShellSessionStarted(
                        stream_id=scope.stream_id, pid=scope.shell.pid, shell_path=self.shell_config.shell_path
                    ),
                    "shell_pool",
                    None,
                )
            session = scope.shell
        try:
            out = await session.run(command, timeout)
        except ShellError as e:
            await session.close()
            raise ToolFailure(f"shell session error: {e}") from None
        if out.timed_out:
            raise ToolFailure(
                f"command timed out after {timeout}s\n"
                f"stdout: {_for_error(out.stdout)}\nstderr: {_for_error(out.stderr)}"
            )
        if out.exit_code != 0:
            raise ToolFailure(
                f"exit code {out.exit_code}\nstdout: {_for_error(out.stdout)}\nstderr: {_for_error(out.stderr)}"
            )
        if not out.stdout:
            return "(no output)"
        size = len(out.stdout.encode("utf-8"))
        if size > MAX_OUTPUT:
            raise ToolFailure(_size_error("stdout", size))
        return out.stdout

    async def close_shell(self, scope: RunScope) -> None:
        if scope.shell is not None:
            await scope.shell.close()
            scope.shell = None
            await self.recorder.emit(
                scope.stream_id,
                ShellSessionClosed(stream_id=scope.stream_id, reason="workflow_end"),
                "shell_pool",
                None,
            )

    async def _http(self, impl: HttpImpl, arguments: str) -> str:
        url = splice_args(impl.url, arguments, mode="url")
        headers = {k: splice_args(v, arguments) for k, v in impl.headers.items()}
        body = splice_args(impl.body_template, arguments, mode="json") if impl.body_template else None
        import httpx  # on an http tool's first call: `run` of a project without one never loads it

        try:
            async with httpx.AsyncClient(timeout=30) as client:
                resp = await client.request(impl.method, url, headers=headers, content=body)
        except httpx.HTTPError as e:
            raise ToolFailure(f"HTTP request failed: {e}") from None
        text = resp.text
        if not resp.is_success:
            raise ToolFailure(f"HTTP {resp.status_code}: {text}")
        size = len(resp.content)
        if size > MAX_OUTPUT:
            raise ToolFailure(_size_error("response body", size))
        return text
