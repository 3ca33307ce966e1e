"""Where zymi-tui's shell policy is stricter than zymi 0.9.3: what splitting shell text by hand misses.

zymi's verdict (engine/policy.py, reproduced exactly) comes first and is never relaxed. This scan,
on a real parse of the command (bashlex), can only raise it:

- command and process substitutions anywhere (inside double quotes too, `$(…)`, backticks,
  `<(…)`, `>(…)`) are judged as commands of their own, through the whole policy;
- a command behind a wrapper or a path (`sudo rm`, `env X=1 rm`, `/bin/rm`, `\\rm`) is judged as the
  bare command by the deny rules and the built-in checks;
- a fork bomb is found whatever its spacing;
- writing to a block device (`>/dev/sda`, `> /dev/nvme0n1`, `dd of=/dev/…`) is a disk overwrite;
- naming a secret file (the file contracts' deny list: `.env`, `id_rsa`, …, `~/.ssh/*`,
  `/proc/*/environ`) in a command is denied as reading it through `read_file` is;
- writing outside the project (an absolute path, `~`, or `..` out of it) by redirection, `tee` or
  `dd of=` asks for approval, as `write_file` outside its allowed folders does.

A command bashlex cannot parse gets at least approval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from zymi_tui.engine.bash_parser import load as load_bashlex

Decision = tuple[str, str]  # ("allow" | "approve" | "deny", deny reason)
RANK = {"allow": 0, "approve": 1, "deny": 2}

WRAPPERS = {"sudo", "doas", "env", "command", "exec", "builtin", "nice", "nohup", "time", "stdbuf", "timeout",
            "xargs", "setsid", "ionice", "chroot", "unbuffer"}  # fmt: skip
_WITH_VALUE = {"-u", "-g", "-n", "-c", "-p", "-s", "-o", "-e", "-i", "-k", "-C", "-d", "-D", "-I", "-L", "-P"}
WRITES = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
HARMLESS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero")
_BLOCK_DEVICE = re.compile(r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|md\d|dm-\d|loop\d|disk\d|sr\d)")
_FORK_BOMB = re.compile(r"([^\s(){}|&;]+)\(\)\{\1\|\1&\};?")
_PROC_SECRET = re.compile(r"^/proc/[^/]+/(?:task/[^/]+/)?(?:environ|mem)$")
NO_READ = {"echo", "printf", "true", "false", "test", "["}  # builtins that print or test words, not files


@dataclass(frozen=True)
class Rules:
    """What the scan asks of the project's policy and contracts."""

    judge: Callable[[str], Decision]  # the whole policy, on a command of its own
    denied_by_rule: Callable[[str], Decision | None]  # zymi's deny globs and built-in checks on one fragment
    secret: Callable[[str], str | None]  # the contracts' deny pattern a path matches, if any


def worse(a: Decision, b: Decision) -> Decision:
    return b if RANK[b[0]] > RANK[a[0]] else a


def _children(node: Any) -> Iterator[Any]:
    for name in ("parts", "list"):
        yield from getattr(node, name, None) or []
    for name in ("command", "output"):
        child = getattr(node, name, None)
        if hasattr(child, "kind"):
            yield child


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in _children(node):
        yield from _walk(child)


def _argv(node: Any) -> list[str]:
    return [p.word for p in node.parts if p.kind == "word"]


def unwrap(argv: list[str]) -> list[str]:
    """The command a wrapper runs, with the command's own path dropped: `sudo -u x /bin/rm -rf /` ->
    `rm -rf /`."""
    words = list(argv)
    while words:
        head = words[0].lstrip("\\").rsplit("/", 1)[-1]
        if head not in WRAPPERS:
            return [head, *words[1:]]
        words = words[1:]
        while words and (words[0].startswith("-") or "=" in words[0] or words[0][:1].isdigit()):
            flag = words.pop(0)
            if flag in _WITH_VALUE and words:
                words.pop(0)
    return words


def outside_project(path: str) -> bool:
    """True for an absolute path, a home path or a relative path that climbs out with `..`."""
    if path.startswith(("/", "~")):
        return True
    depth = 0
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def secret_place(path: str) -> bool:
    """A process's environment or memory, or anything in an `.ssh` folder."""
    return bool(_PROC_SECRET.match(path)) or "/.ssh/" in f"/{path}"


def _secret(path: str, rules: Rules) -> str | None:
    bare = path.split("=", 1)[1] if path.startswith("-") and "=" in path else path
    if not bare or bare.startswith("-"):
        return None
    return "secret file" if secret_place(bare) else rules.secret(bare)


def _write_target(path: str, rules: Rules) -> Decision:
    if path.startswith(HARMLESS) or path.isdigit() or path == "-" or path.startswith("/dev/fd/"):
        return "allow", ""
    if _BLOCK_DEVICE.match(path):
        return "deny", "Blocked: Disk overwrite"
    pattern = _secret(path, rules)
    if pattern is not None:
        return "deny", f"File write denied ({pattern}): {path}"
    if outside_project(path):
        return "approve", ""
    return "allow", ""


def _command(node: Any, rules: Rules) -> Decision:
    argv = unwrap(_argv(node))
    if not argv:
        return "allow", ""
    verdict: Decision = rules.denied_by_rule(" ".join(argv)) or ("allow", "")
    if verdict[0] == "deny":
        return verdict
    name = argv[0].lower()
    if name not in NO_READ:
        for word in argv[1:]:
            pattern = _secret(word, rules)
            if pattern is not None:
                return "deny", f"File read denied ({pattern}): {word}"
    if name == "tee":
        for word in argv[1:]:
            if not word.startswith("-"):
                verdict = worse(verdict, _write_target(word, rules))
    if name == "dd":
        for word in argv[1:]:
            if word.startswith("of="):
                verdict = worse(verdict, _write_target(word[3:], rules))
    return verdict


def _redirect(node: Any, rules: Rules) -> Decision:
    target = node.output
    if not hasattr(target, "kind") or target.kind != "word":
        return "allow", ""  # `2>&1`: a file descriptor
    if node.type in WRITES:
        return _write_target(target.word, rules)
    if node.type == "<":
        pattern = _secret(target.word, rules)
        if pattern is not None:
            return "deny", f"File read denied ({pattern}): {target.word}"
    return "allow", ""


def stricter(command: str, rules: Rules) -> Decision:
    """The scan's verdict on `command` (to be combined with zymi's, never to relax it)."""
    if _FORK_BOMB.search(re.sub(r"\s+", "", command)):
        return "deny", "Blocked: Fork bomb"
    bashlex = load_bashlex()  # at the first shell command, not at start-up

    try:
        trees = bashlex.parse(command)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError, TypeError):
        return "approve", ""
    verdict: Decision = "allow", ""
    for tree in trees:
        for node in _walk(tree):
            if node.kind in ("commandsubstitution", "processsubstitution"):
                start, end = node.command.pos
                found = rules.judge(command[start:end])
            elif node.kind == "command":
                found = _command(node, rules)
            elif node.kind == "redirect":
                found = _redirect(node, rules)
            else:
                continue
            verdict = worse(verdict, found)
            if verdict[0] == "deny":
                return verdict
    return verdict
