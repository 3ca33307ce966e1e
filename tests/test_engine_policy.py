"""The gate (docs/engine.md#tool-dispatch, #shell-policy): zymi's shell policy and file contracts, with its reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from zymi_tui.engine.config import FileWriteContract, PolicyConfig
from zymi_tui.engine.policy import Contracts, split_compound

ON = PolicyConfig(enabled=True, allow=["ls *", "cat *", "echo *"], deny=["rm -rf *"])


def verdict(command: str, policy: PolicyConfig = ON) -> str:
    return Contracts(policy, FileWriteContract(), Path.cwd()).shell_command(command).text()


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", "approved"),
        ("LS -LA", "approved"),  # case-insensitive
        ("ls", "requires_approval: Shell command requires approval: ls"),  # `ls *` needs the space
        ("echo a && pwd", "requires_approval: Shell command requires approval: echo a && pwd"),
        ("rm -rf junk", "denied: Command matches deny rule: rm -rf *"),
        ("echo ok; rm -rf junk", "denied: Command matches deny rule: rm -rf *"),
        ("echo $(rm -rf x)", "denied: Command matches deny rule: rm -rf *"),
        ("bash -c 'rm -rf x'", "denied: Command matches deny rule: rm -rf *"),
        ("echo $HOME", "requires_approval: Shell command requires approval: echo $HOME"),
        ("echo '$HOME'", "approved"),
        ("cat a | cat -n b", "approved"),
        ("cat a | cat", "requires_approval: Shell command requires approval: cat a | cat"),
        ("mkfs.ext4 /dev/sdb", "denied: Blocked: Filesystem formatting"),
        ("docker run --privileged x", "denied: Blocked: Docker privilege escalation (container escape to host root)"),
    ],
)
def test_shell_policy(command: str, expected: str) -> None:
    assert verdict(command) == expected


def test_disabled_policy_asks_for_everything() -> None:
    assert verdict("ls -la", PolicyConfig()) == "requires_approval: Shell command requires approval: ls -la"


def test_deny_wins_over_allow() -> None:
    policy = PolicyConfig(enabled=True, allow=["echo *"], deny=["*"])
    assert verdict("echo hi", policy) == "denied: Command matches deny rule: *"


def test_splitting_respects_quotes_and_parens() -> None:
    assert split_compound("echo two 1>&2") == ["echo two 1>", "2"]
    assert split_compound("echo 'a; b' && (x | y)") == ["echo 'a; b'", "(x | y)"]


def test_long_commands_are_cut_to_100_bytes_in_the_reason() -> None:
    cmd = "pwd " + "x" * 200
    assert verdict(cmd) == "requires_approval: Shell command requires approval: " + cmd[:100]


@pytest.mark.parametrize(
    ("path", "allowed", "expected"),
    [
        (".env", ["./out"], "denied: File write denied (^.*\\.env$): .env"),
        ("keys/id_rsa", ["./keys"], "denied: File write denied (^id_rsa$): keys/id_rsa"),
        ("notes.txt", [], "requires_approval: No allowed_dirs configured, file write requires approval: notes.txt"),
        ("out/a/b.txt", ["./out"], "approved"),
        ("out/../etc/x", ["./out"], "requires_approval: File write outside allowed directories: out/../etc/x"),
    ],
)
def test_file_write_contract(path: str, allowed: list[str], expected: str, tmp_path: Path) -> None:
    contracts = Contracts(ON, FileWriteContract(allowed_dirs=allowed), tmp_path)
    assert contracts.write_file(path).text() == expected


def test_file_read_uses_the_secret_list_and_extra_patterns(tmp_path: Path) -> None:
    contracts = Contracts(ON, FileWriteContract(deny_patterns=["*.csv"]), tmp_path)
    assert contracts.read_file(".env").text() == "denied: File read denied (^.*\\.env$): .env"
    assert contracts.read_file("data/x.csv").text() == "denied: File read denied (^.*\\.csv$): data/x.csv"
    assert contracts.read_file("/etc/hostname").text() == (  # zymi: approved; reads outside the project ask
        "requires_approval: File read outside the project requires approval: /etc/hostname"
    )
