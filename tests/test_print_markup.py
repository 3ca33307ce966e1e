"""`print_markup` writes into a pipe or a file the bytes rich's console prints for the same markup (a
guard: on main the commands printed through rich itself). The expected bytes are rich's own, printed by
a console made as the commands' is (`highlight=False, soft_wrap=True`), never by the code under test."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from zymi_tui.commands import common

CASES = [
    "plain text",
    "[yellow]⚠ a warning[/]\nand a second line",
    "[bold]signal[/]  summary with :warning: and :smile: and :not_an_emoji: codes",
    "escaped \\[bold] brackets \\[/] and [green]→ styled[/] and a lone [ bracket",
    "a backslash at the end \\\\",
    "controls \x07 bell \r return \x0b vtab \x1b[31m escape",
    "a tab\there, expanded by rich",
    "wide ｗｉｄｅ and combining e\u0301 " + "long " * 80,
    "\n\nblank lines around\n\n",
]


@pytest.mark.parametrize("markup", CASES)
def test_print_markup_writes_what_rich_prints(markup: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = io.StringIO()
    Console(file=expected, highlight=False, soft_wrap=True).print(markup)
    written = io.StringIO()
    console = Console(file=written, highlight=False, soft_wrap=True)
    assert not console.is_terminal and console.color_system is None  # (a pipe: the plain text path)
    monkeypatch.setattr(common, "_console", lambda _stderr: console)
    common.print_markup(markup)
    assert written.getvalue() == expected.getvalue()
