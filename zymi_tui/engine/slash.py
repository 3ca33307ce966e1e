"""The chat's slash commands, parsed in one place for the full chat screen and `chat --plain`.

A line is a command when its first word is `/` followed by letters (`/profile chat`); such a line is
never sent to the model, an unknown command included (it gets a one-line answer instead). Any other
line, `/usr/bin is a path` included, is a message.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    usage: str
    sentence: str
    spellings: tuple[str, ...]


COMMANDS: tuple[SlashCommand, ...] = (  # sentences short: the list fits a notification on an 80x24 screen
    SlashCommand("profile", "/profile [NAME]", "knobs of the next turns", ("/profile",)),
    SlashCommand("context", "/context", "the last call's context", ("/context",)),
    SlashCommand("help", "/help", "this list", ("/help",)),
    SlashCommand("quit", "/quit", "leave (also /exit, Ctrl-D)", ("/quit", "/exit")),
)
_BY_SPELLING = {spelling: c.name for c in COMMANDS for spelling in c.spellings}
_WORD = re.compile(r"/[A-Za-z]+")


@dataclass(frozen=True, slots=True)
class Slash:
    command: str | None  # a `SlashCommand.name`; None: a command we do not know
    word: str  # as typed
    arg: str


def parse_slash(line: str) -> Slash | None:
    """The command on this line, or None when the line is a message for the model."""
    word, _, rest = line.strip().partition(" ")
    if not _WORD.fullmatch(word):
        return None
    return Slash(_BY_SPELLING.get(word.lower()), word, rest.strip())


def help_text(profiles: Sequence[str]) -> str:
    """Every command with what it does, and the profile names `/profile` takes (no NAME: the next one)."""
    width = max(len(c.usage) for c in COMMANDS)
    lines = ["Commands (never sent to the model):"]
    lines += [f"  {c.usage:<{width}}  {c.sentence}" for c in COMMANDS]
    lines.append(f"Profiles: {', '.join(profiles)}")
    return "\n".join(lines)


def unknown_command(slash: Slash) -> str:
    return f"unknown command {slash.word} (not sent to the model); /help lists the commands"
