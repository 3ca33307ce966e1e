"""The gate every tool call passes (docs/engine.md#tool-dispatch, #shell-policy): shell policy and file contracts.

A verdict is `approved`, `requires_approval: <reason>` or `denied: <reason>`, worded as zymi's
`IntentionEvaluated.verdict`. Nothing runs unless the verdict (or a human) allows it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import msgspec

from zymi_tui.engine.config import FileWriteContract, PolicyConfig
from zymi_tui.engine.places import Places, normalize_components, rust_escape
from zymi_tui.engine.shell_scan import Rules, stricter, worse
from zymi_tui.engine.templating import cut_bytes

SUSPICIOUS = ("eval", "source")
MAX_DEPTH = 10


class Verdict(msgspec.Struct, frozen=True):
    kind: Literal["approved", "requires_approval", "denied"]
    reason: str = ""
    target: Path | None = None  # a file contract's: where the path really pointed when judged
    why: str = ""  # what the stricter gate found (zymi's wording of `reason` does not say); empty: zymi's own

    def text(self) -> str:
        return "approved" if self.kind == "approved" else f"{self.kind}: {self.reason}"


APPROVED = Verdict("approved")


def _policy_glob(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if c == "*" else "." if c == "?" else rust_escape(c) for c in pattern)
    return re.compile("^" + body + "$", re.IGNORECASE)


def split_compound(command: str) -> list[str]:
    """Split on `;`, `&&`, `||`, `|`, `&` outside quotes, escapes and parentheses."""
    out: list[str] = []
    cur: list[str] = []
    state, depth, i = "n", 0, 0

    def push() -> None:
        text = "".join(cur).strip()
        if text:
            out.append(text)
        cur.clear()

    while i < len(command):
        c = command[i]
        if state == "n":
            if c in "\\'\"(":
                cur.append(c)
                state = {"\\": "esc", "'": "sq", '"': "dq", "(": "paren"}[c]
                depth = 1
            elif c == ";":
                push()
            elif c in "&|":
                push()
                if i + 1 < len(command) and command[i + 1] == c:
                    i += 1
            else:
                cur.append(c)
        else:
            cur.append(c)
            if state == "sq" and c == "'":
                state = "n"
            elif state == "dq":
                state = "dqesc" if c == "\\" else "n" if c == '"' else "dq"
            elif state == "dqesc":
                state = "dq"
            elif state == "esc":
                state = "n"
            elif state == "paren":
                depth += c == "("
                depth -= c == ")"
                if depth == 0:
                    state = "n"
        i += 1
    push()
    return out


def _subshells(command: str) -> list[str]:
    out: list[str] = []
    i, single = 0, False
    while i < len(command):
        c = command[i]
        if c == "'":
            single = not single
        elif not single and c == "$" and command[i + 1 : i + 2] == "(":
            depth, j = 1, i + 2
            while j < len(command) and depth > 0:
                depth += command[j] == "("
                depth -= command[j] == ")"
                if depth > 0:
                    j += 1
            if depth == 0:
                out.append(command[i + 2 : j])
                i = j + 1
                continue
        elif not single and c == "`":
            end = command.find("`", i + 1)
            if end >= 0:
                out.append(command[i + 1 : end])
                i = end + 1
                continue
        i += 1
    return out


_SHELL_C = re.compile(r"(?i)\b(?:bash|sh|zsh|dash)\s+-c\s+(.+)")


def _shell_c_arg(command: str) -> str | None:
    m = _SHELL_C.search(command)
    if not m:
        return None
    arg = m.group(1).strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "'\"":
        arg = arg[1:-1]
    return arg or None


def all_fragments(command: str) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    queue: list[tuple[str, int]] = [(command, 0)]
    while queue:
        cmd, depth = queue.pop()
        if depth >= MAX_DEPTH:
            if cmd not in seen:
                seen.add(cmd)
                result.append(cmd)
            continue
        for sub in split_compound(cmd):
            if sub in seen:
                continue
            seen.add(sub)
            result.append(sub)
            queue.extend((b, depth + 1) for b in _subshells(sub) if b not in seen)
            inner = _shell_c_arg(sub)
            if inner is not None and inner not in seen:
                queue.append((inner, depth + 1))
    return result


def _normalize(command: str) -> tuple[str, set[str], list[str]]:
    tokens = command.split()
    if not tokens:
        return "", set(), []
    base = tokens[0].lower()
    longs = {"rm": {"--recursive": "r", "--force": "f"}, "chmod": {"--recursive": "R"}, "chown": {"--recursive": "R"}}
    flags: set[str] = set()
    args: list[str] = []
    for tok in tokens[1:]:
        if tok.startswith("--"):
            short = longs.get(base, {}).get(tok.lower())
            if short:
                flags.add(short)
            else:
                args.append(tok.lower())
        elif tok.startswith("-") and len(tok) > 1:
            flags.update(ch.lower() for ch in tok[1:])
        else:
            args.append(tok.lower())
    return base, flags, args


_SENSITIVE = ("/etc", "/root", "/var/run/docker.sock", "/run/docker.sock", "/proc", "/sys", "/dev", "/boot")


def _docker_escape(lower: str) -> bool:
    if "docker" not in lower:
        return False
    flags = ("--privileged", "--device", "--pid=host", "--pid host", "--cap-add=all", "--cap-add all",
             "--cap-add=sys_admin", "--cap-add sys_admin", "apparmor:unconfined", "apparmor=unconfined")  # fmt: skip
    if any(f in lower for f in flags):
        return True
    for m in re.finditer(r"(?:-v|--volume|--mount)[= ]+['\"]?([^\s'\":,]+)", lower):
        src = m.group(1).replace("source=", "").replace("src=", "").rstrip("/") or "/"
        if src == "/" or any(src == s or src.startswith(s + "/") for s in _SENSITIVE):
            return True
    return False


def _dangerous(command: str) -> str | None:
    lower = command.lower()
    base, flags, args = _normalize(command)
    if ":(){:|:&};:" in lower:
        return "Blocked: Fork bomb"
    if "mkfs." in lower:
        return "Blocked: Filesystem formatting"
    if "> /dev/sda" in lower:
        return "Blocked: Disk overwrite"
    if base == "rm" and {"r", "f"} <= flags and any(a in ("/", "/*") for a in args):
        return "Blocked: Recursive deletion of root filesystem"
    if (
        base == "dd"
        and any(a.startswith(("if=/dev/zero", "if=/dev/random")) for a in args)
        and any(a.startswith("of=/dev/sd") for a in args)
    ):
        return "Blocked: Disk overwrite"
    if base == "chmod" and flags & {"r", "R"} and "777" in args and "/" in args:
        return "Blocked: Recursive permission change on root"
    if base == "chown" and flags & {"r", "R"} and "/" in args:
        return "Blocked: Recursive ownership change on root"
    if _docker_escape(lower):
        return "Blocked: Docker privilege escalation (container escape to host root)"
    if "nsenter" in lower and "-t 1" in lower:
        return "Blocked: nsenter into PID 1 (host namespace escape)"
    return None


def _has_variable(command: str) -> bool:
    single = False
    for i, c in enumerate(command):
        if c == "'":
            single = not single
        elif not single and c == "$" and i + 1 < len(command):
            nxt = command[i + 1]
            if nxt != "(" and ((nxt.isascii() and nxt.isalnum()) or nxt in "{_"):
                return True
    return False


_RANK = {"allow": 0, "approve": 1, "deny": 2}


class ShellPolicy:
    def __init__(self, config: PolicyConfig) -> None:
        self.config = config
        self.allow = [_policy_glob(p) for p in config.allow]
        self.deny = [(_policy_glob(p), p) for p in config.deny]
        self.approve = [_policy_glob(p) for p in config.require_approval]

    def denied_by_rule(self, fragment: str) -> tuple[str, str] | None:
        """A deny glob or a built-in dangerous check on one fragment, as zymi words it."""
        for rx, pattern in self.deny:
            if rx.match(fragment):
                return "deny", f"Command matches deny rule: {pattern}"
        danger = _dangerous(fragment)
        return ("deny", danger) if danger else None

    def _single(self, fragment: str) -> tuple[str, str]:
        denied = self.denied_by_rule(fragment)
        if denied is not None:
            return denied
        if any(rx.match(fragment) for rx in self.approve):
            return "approve", ""
        if any(rx.match(fragment) for rx in self.allow):
            return "allow", ""
        return "approve", ""

    def decide(self, command: str) -> tuple[str, str]:
        """("allow"|"approve"|"deny", deny reason)."""
        if not self.config.enabled:
            return "approve", ""
        text = command.strip()
        fragments = all_fragments(text)
        worst, evaluated = "allow", False
        for fragment in fragments:
            if not fragment.strip():
                continue
            evaluated = True
            decision, reason = self._single(fragment.strip())
            if decision == "deny":
                return decision, reason
            if _RANK[decision] > _RANK[worst]:
                worst = decision
        if _has_variable(text) or any(_normalize(f.strip())[0] in SUSPICIOUS for f in fragments):
            worst = "approve"
        return (worst if evaluated else "approve"), ""


class Contracts:
    """Shell policy + file contracts: zymi's `ContractEngine`, made stricter where zymi's own rules
    mean to deny or ask (engine/shell_scan.py, engine/places.py: paths resolved from the project root)."""

    def __init__(
        self, policy: PolicyConfig, file_write: FileWriteContract, root: Path, store: Path | None = None
    ) -> None:
        self.shell = ShellPolicy(policy)
        self.file_write = file_write
        self.places = Places.of_contract(root, file_write, store)
        self.root = self.places.root
        self.cwd = self.root  # the shell's folder while a command is judged
        self.rules = Rules(
            judge=self._judge,
            denied_by_rule=self.shell.denied_by_rule,
            read=lambda p: self.places.read(p, self.cwd),
            tree=lambda p: self.places.read_tree(p, self.cwd),
            write=lambda p: self.places.write(p, self.cwd, shell=True),
            cwd=lambda: self.cwd,
        )
        self._depth = 0

    def _judge(self, command: str) -> tuple[str, str]:
        """zymi's decision on `command`, raised by the scan (never lowered)."""
        decision = self.shell.decide(command)
        if decision[0] == "deny" or not self.shell.config.enabled or self._depth >= MAX_DEPTH:
            return decision
        self._depth += 1
        try:
            return worse(decision, stricter(command, self.rules))
        finally:
            self._depth -= 1

    def shell_command(self, command: str, cwd: Path | None = None) -> Verdict:
        """The verdict on `command` run in `cwd` (default: the project root)."""
        self.cwd = cwd or self.root
        try:
            decision, reason = self._judge(command.strip())
        finally:
            self.cwd = self.root
        if decision == "allow":
            return APPROVED
        if decision == "deny":
            return Verdict("denied", reason)
        text = f"Shell command requires approval: {cut_bytes(command, 100)}"
        return Verdict("requires_approval", text, why=reason)  # why: empty where zymi's own rules ask

    def resolve(self, path: str) -> Path | None:
        """Where `path` really points, from the project root: `..` and symlinks followed (None: nowhere,
        e.g. a symlink loop or a NUL byte)."""
        return self.places.resolve(path)

    def read_file(self, path: str) -> Verdict:
        """The verdict on reading `path`, with the real file it judged (`target`): the read must open that
        file and no other (engine/nofollow.py), whatever the path points to by then."""
        (decision, reason), real = self.places.judged_read(path)
        if decision == "deny":
            return Verdict("denied", reason)
        if decision == "approve":
            return Verdict("requires_approval", f"File read outside the project requires approval: {path}", why=reason)
        return msgspec.structs.replace(APPROVED, target=real)

    def write_file(self, path: str) -> Verdict:
        """The verdict on writing `path`, with the real file it judged (`target`): the write must land
        there and nowhere else (engine/nofollow.py), whatever the path points to by then."""
        return msgspec.structs.replace(self._write_verdict(path), target=self.resolve(path))

    def _write_verdict(self, path: str) -> Verdict:
        decision, reason = self.places.write(path)
        if decision == "deny":
            return Verdict("denied", reason)
        if decision == "approve":
            return Verdict("requires_approval", reason)
        target = normalize_components(path)
        for d in self.file_write.allowed_dirs:  # zymi's own test, on the path as written, comes too
            parts = normalize_components(d)
            if target[: len(parts)] == parts and len(target) >= len(parts):
                return APPROVED
        return Verdict("requires_approval", f"File write outside allowed directories: {path}")
