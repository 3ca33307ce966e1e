"""engine/shell_words.py against the oracle it imitates: real bash expanding the same word in the same
folder (`printf '%s\\0' WORD`). Every word the policy claims to know must expand exactly as bash does;
the ones it cannot know are None, never a guess."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from zymi_tui.engine.shell_words import expand

KNOWN = [
    "*", ".*", ".e*", ".[e]nv", ".en?", "'*'", '"*"', "\\*", "a*", "*.txt", "dir/*", "dir/.*", "*/",
    "~", "~/x", "$HOME", '"$HOME"/x', "${HOME}/y", "'$HOME'", "[ab].*", "[!a]*", "[^a]*", "nomatch*",
    '"sp ace"', "sp\\ ace", "*ace", "'.e'*", '".e"*', "x'*'y", "d?r/x", "*/x", "/etc/host*", "[.]env",
    "?env", "a.txt", "-n1", "--file=.env", "dir/../a.*", "\\.env",
    "[a-b]*", "[]]*", "[!]]*", "a[", "[", "**", "**/x", "$HOME*", "~/.bash*", "link/*", "*.{txt}",
]  # fmt: skip
UNKNOWN = ["$X", "$(ls)", "`ls`", "~root", "{a,b}.txt", "{1..3}", "$'a'", '"$(ls)"', "${HOME:0:1}", "$1",
           "[[:alpha:]]*", "*[[:space:]]*", ".[[=e=]]nv"]  # fmt: skip


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("words")
    for name in (".env", ".envrc", "a.txt", "b.md", "sp ace", "dir/x", "dir/.hidden"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    (root / "link").symlink_to("dir")
    return root


def bash_words(word: str, cwd: Path) -> list[str]:
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", f"printf '%s\\0' {word}"],
        cwd=cwd, capture_output=True, check=True, timeout=10,
    )  # fmt: skip
    return done.stdout.decode().split("\0")[:-1]


@pytest.mark.parametrize("word", KNOWN)
def test_a_word_expands_as_bash_expands_it(tree: Path, word: str) -> None:
    assert expand(word, tree) == bash_words(word, tree)


@pytest.mark.parametrize("word", UNKNOWN)
def test_a_word_only_the_run_can_tell_is_not_guessed(tree: Path, word: str) -> None:
    assert expand(word, tree) is None
