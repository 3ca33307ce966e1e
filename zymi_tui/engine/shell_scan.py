"""Where zymi-tui's shell policy is stricter than zymi 0.9.3: what splitting shell text by hand misses.

zymi's verdict (engine/policy.py, reproduced exactly) comes first and is never relaxed. This scan,
on a real parse of the command (bashlex), can only raise it:

- command and process substitutions anywhere (inside double quotes too, `$(…)`, backticks,
  `<(…)`, `>(…)`) are judged as commands of their own, through the whole policy;
- a command behind a wrapper or a path (`sudo rm`, `env X=1 rm`, `/bin/rm`, `\\rm`) is judged as the
  bare command by the deny rules and the built-in checks;
- a fork bomb is found whatever its spacing;
- writing to a block device (`>/dev/sda`, `> /dev/nvme0n1`, `dd of=/dev/…`) is a disk overwrite;
- what each command will touch (engine/shell_touch.py), its words expanded as bash would against the
  real tree (engine/shell_words.py), is judged as the file tools judge it (engine/places.py): secrets,
  network devices and block devices denied, reads outside the project and writes outside the
  file_write contract (or into the project's own files) asking; redirections are writes and reads too.

A command bashlex cannot parse, or a word only the run can tell, gets at least approval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from zymi_tui.engine.bash_parser import load as load_bashlex
from zymi_tui.engine.shell_touch import touches
from zymi_tui.engine.shell_words import expand

Decision = tuple[str, str]  # ("allow" | "approve" | "deny", deny reason)
RANK = {"allow": 0, "approve": 1, "deny": 2}

WRAPPERS = {"sudo", "doas", "env", "command", "exec", "builtin", "nice", "nohup", "time", "stdbuf", "timeout",
            "xargs", "setsid", "ionice", "chroot", "unbuffer"}  # fmt: skip
_WITH_VALUE = {"-u", "-g", "-n", "-c", "-p", "-s", "-o", "-e", "-i", "-k", "-C", "-d", "-D", "-I", "-L", "-P"}
WRITES = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
READS = {"<", "<>"}
MOVES = {"cd", "pushd", "popd", "shopt", "set"}  # they change what the next words name (folder, globbing)
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "mksh", "busybox"}
_FORK_BOMB = re.compile(r"([^\s(){}|&;]+)\(\)\{\1\|\1&\};?")


class Rules(msgspec.Struct, frozen=True):
    """What the scan asks of the project's policy and contracts."""

    judge: Callable[[str], Decision]  # the whole policy, on a command of its own
    denied_by_rule: Callable[[str], Decision | None]  # zymi's deny globs and built-in checks on one fragment
    read: Callable[[str], Decision]  # a read of a path (from the shell's folder), as the file tools judge it
    tree: Callable[[str], Decision]  # a recursive read of everything under a path
    write: Callable[[str], Decision]  # a write of a path, under the file_write contract
    cwd: Callable[[], Path]  # the folder the command runs in


def worse(a: Decision, b: Decision) -> Decision:
    """The stricter of two decisions (of two alike, the first that says why)."""
    if RANK[b[0]] > RANK[a[0]] or (RANK[b[0]] == RANK[a[0]] and not a[1] and b[1]):
        return b
    return a


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


def _words(nodes: list[Any], command: str, rules: Rules) -> list[list[str]] | None:
    """Each word node's expansion (None: one only the run can tell)."""
    out: list[list[str]] = []
    for node in nodes:
        words = expand(command[node.pos[0] : node.pos[1]], rules.cwd())
        if words is None:
            return None
        out.append(words)
    return out


def _inner_script(name: str, args: list[str], rules: Rules) -> Decision:
    """`bash -c SCRIPT` and `eval WORDS`: the script judged as a command of its own."""
    if name == "eval":
        return rules.judge(" ".join(args)) if args else ("allow", "")
    for i, word in enumerate(args):
        if word.startswith("-") and not word.startswith("--") and "c" in word and i + 1 < len(args):
            return rules.judge(args[i + 1])
    return "allow", ""


def _each(paths: list[str], judge: Callable[[str], Decision], verdict: Decision) -> Decision:
    for path in paths:
        verdict = worse(verdict, judge(path))
        if verdict[0] == "deny":
            break
    return verdict


def _command(node: Any, command: str, rules: Rules) -> Decision:
    nodes = [p for p in node.parts if p.kind == "word"]
    argv = unwrap([p.word for p in nodes])
    if not argv:
        return "allow", ""
    verdict: Decision = rules.denied_by_rule(" ".join(argv)) or ("allow", "")
    if verdict[0] == "deny":
        return verdict
    heads = {w.lstrip("\\").rsplit("/", 1)[-1] for w in (p.word for p in nodes[: len(nodes) - len(argv) + 1])}
    words = _words(nodes[len(nodes) - len(argv) + 1 :], command, rules)
    if words is None:
        return worse(verdict, ("approve", "a word of the command is only known when it runs"))
    name = argv[0].lower()
    if name in SHELLS or name == "eval":
        verdict = worse(verdict, _inner_script(name, argv[1:], rules))
    touched = touches(name, words, via_xargs="xargs" in heads)
    verdict = _each(touched.writes, rules.write, verdict)
    verdict = _each(touched.reads, rules.read, verdict)
    verdict = _each(touched.trees, rules.tree, verdict)
    if touched.opaque:
        verdict = worse(verdict, ("approve", touched.opaque))
    return verdict


def _redirect(node: Any, command: str, rules: Rules) -> Decision:
    target = node.output
    if not hasattr(target, "kind") or target.kind != "word":
        return "allow", ""  # `2>&1`: a file descriptor
    if node.type not in WRITES and node.type not in READS:
        return "allow", ""  # a here-document or here-string: no file
    if node.type == ">&" and (target.word.isdigit() or target.word == "-"):
        return "allow", ""  # `>&2`: a file descriptor
    paths = expand(command[target.pos[0] : target.pos[1]], rules.cwd())
    if paths is None:
        return "approve", "a redirection's target is only known when it runs"
    verdict: Decision = "allow", ""
    if node.type in WRITES:
        verdict = _each(paths, rules.write, verdict)
    if node.type in READS:
        verdict = _each(paths, rules.read, verdict)
    return verdict


def stricter(command: str, rules: Rules) -> Decision:
    """The scan's verdict on `command` (to be combined with zymi's, never to relax it)."""
    if _FORK_BOMB.search(re.sub(r"\s+", "", command)):
        return "deny", "Blocked: Fork bomb"
    bashlex = load_bashlex()  # at the first shell command, not at start-up

    try:
        trees = bashlex.parse(command)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError, TypeError):
        return "approve", "the command cannot be parsed"
    verdict: Decision = "allow", ""
    nodes = [node for tree in trees for node in _walk(tree)]
    commands = [unwrap(_argv(n))[:1] for n in nodes if n.kind == "command"]
    globignore = any(n.kind == "assignment" and n.word.startswith("GLOBIGNORE=") for n in nodes)
    if globignore or (len(commands) > 1 and any(c and c[0] in MOVES for c in commands)):
        verdict = "approve", "the command changes what its other words name (cd, shopt, set, GLOBIGNORE)"
    for tree in trees:
        for node in _walk(tree):
            if node.kind in ("commandsubstitution", "processsubstitution"):
                start, end = node.command.pos
                found = rules.judge(command[start:end])
            elif node.kind == "command":
                found = _command(node, command, rules)
            elif node.kind == "redirect":
                found = _redirect(node, command, rules)
            else:
                continue
            verdict = worse(verdict, found)
            if verdict[0] == "deny":
                return verdict
    return verdict
