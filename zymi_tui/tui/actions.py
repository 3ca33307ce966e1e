"""One registry of actions: every screen declares its actions once; its key bindings, its footer, its
`?` help and the command palette (ctrl+p) are all made from that declaration.

How a screen declares its actions::

    from zymi_tui.tui.actions import Act, ActionScreen, Nav

    class AdviceScreen(ActionScreen):
        ACTIONS = (
            Act("escape", "close", "Back", "Close this screen and go back to the dashboard.", "back close"),
            Act("e", "export", "Export", "Write the advice as Markdown and JSON beside the store.",
                "export markdown json save"),
        )
        NAV = (Nav("↑ ↓", "move in the list"),)            # optional: keys that are not actions
        HELP_INTRO = "What this screen shows, in a sentence or two."  # optional: the top of `?` help

        def action_export(self) -> None: ...

`ActionScreen` turns `ACTIONS` into `BINDINGS` (a subclass's `ACTIONS` replaces its parent's; reuse
the parent's with `ACTIONS = (*Parent.ACTIONS, Act(...))`), adds `?` / F1 help and puts every action
in the command palette, searchable by its name, its sentence and its search words. A key that the app
owns (ctrl+p, ctrl+q, ctrl+c), that a focused text input takes for itself (ctrl+←, ctrl+e, ctrl+k, …)
or that a terminal cannot tell from another (ctrl+m is Enter, ctrl+i is Tab) is refused with a
`KeyClash` when the class is defined, so a binding that can never fire cannot be declared.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState

from zymi_tui.tui.failures import failure_line, show_in_panel
from zymi_tui.tui.footers import FittingFooter

APP_KEYS = frozenset({"ctrl+p", "ctrl+q", "ctrl+c"})
"""The app's own keys: the command palette, quit, and copy / quit."""

INPUT_KEYS = frozenset({
    "left", "right", "shift+left", "shift+right", "ctrl+left", "ctrl+right", "ctrl+shift+left", "ctrl+shift+right",
    "home", "end", "ctrl+a", "ctrl+e", "shift+home", "shift+end", "delete", "ctrl+d", "backspace", "enter", "ctrl+w",
    "ctrl+u", "ctrl+k", "ctrl+x", "ctrl+v", "ctrl+shift+a", "ctrl+backspace", "alt+backspace", "super+backspace",
})  # fmt: skip
"""Keys a focused Textual `Input` handles itself (textual 8.2 `Input.BINDINGS`)."""

TERMINAL_ALIASES = frozenset({"ctrl+m", "ctrl+i", "ctrl+h", "ctrl+left_square_bracket"})
"""Keys a terminal sends as the same bytes as another key (Enter, Tab, Backspace, Esc)."""

KEY_LABELS = {
    "question_mark": "?", "slash": "/", "escape": "Esc", "enter": "Enter", "tab": "Tab", "left": "←",
    "right": "→", "up": "↑", "down": "↓", "pageup": "PgUp", "pagedown": "PgDn", "home": "Home", "end": "End",
    "space": "Space",
}  # fmt: skip


class KeyClash(Exception):
    """A screen declared a key that can never reach it."""


def key_label(keys: str) -> str:
    """`ctrl+s` -> `Ctrl+S`, `question_mark` -> `?`, `f4` -> `F4`; several keys joined with `/`."""
    out = []
    for key in keys.split(","):
        *mods, base = key.split("+")
        label = KEY_LABELS.get(base, base.upper() if len(base) > 1 else base)
        out.append("+".join([*(m.capitalize() for m in mods), label]))
    return "/".join(out)


@dataclass(frozen=True, slots=True)
class Act:
    """One action of a screen: the key(s), the `action_*` it runs, a short name, one sentence, search words."""

    keys: str
    action: str
    name: str
    sentence: str
    words: str = ""
    priority: bool = False

    @property
    def label(self) -> str:
        return key_label(self.keys)

    @property
    def method(self) -> str:
        """The action's method name without arguments (`pick(-1)` -> `pick`)."""
        return self.action.split("(", 1)[0]

    def search_text(self) -> str:
        return f"{self.name} {self.words} {self.sentence}"

    def binding(self) -> Binding:
        display = None if "ctrl+" in self.keys else self.label  # Textual shows ctrl keys as ^z
        return Binding(self.keys, self.action, self.name, show=True, priority=self.priority, tooltip=self.sentence,
                       key_display=display)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Nav:
    """A key that moves rather than acts (arrows, Tab): listed in `?` help only."""

    keys: str
    what: str


PALETTE_IN_MODAL = Binding(App.COMMAND_PALETTE_BINDING, "app.command_palette", "palette", show=False)
"""The app's own palette key, which reaches a modal too: bound there again so the modal's footer shows it
(a footer lists the bindings of the screens from the top one down to the first modal)."""

HELP_ACT = Act("question_mark,f1", "show_help", "Help", "Every key of this screen and what it does.", "help keys")


def check_keys(owner: str, actions: Iterable[Act], *, has_input: bool) -> None:
    seen: dict[str, str] = {}
    for act in actions:
        for key in act.keys.split(","):
            if key in APP_KEYS:
                raise KeyClash(f"{owner}: {key} ({act.name}) is the app's own key")
            if key in TERMINAL_ALIASES:
                raise KeyClash(f"{owner}: {key} ({act.name}) reaches the app as another key in a terminal")
            if has_input and key in INPUT_KEYS:
                raise KeyClash(f"{owner}: {key} ({act.name}) is taken by a focused text input")
            if key in seen and seen[key] != act.action:
                raise KeyClash(f"{owner}: {key} is bound to both {seen[key]} and {act.action}")
            seen[key] = act.action


def all_actions(screen: object) -> tuple[Act, ...]:
    """The registry of a screen (its ACTIONS and help); () for a screen that declares none."""
    if not isinstance(screen, ActionScreen | ActionModal):
        return ()
    return screen.registry()


class _Declares:
    """What ActionScreen and ActionModal share (a mixin: Textual's Screen and ModalScreen are both needed)."""

    ACTIONS: ClassVar[tuple[Act, ...]] = ()
    NAV: ClassVar[tuple[Nav, ...]] = ()
    HELP_INTRO: ClassVar[str] = ""
    HELP_TITLE: ClassVar[str] = ""
    HAS_INPUT: ClassVar[bool] = False
    """True when a text input usually has the focus (the actions must work while it has): keys it would
    swallow are refused. Letters are typed into it, so such a screen binds function and ctrl keys."""
    WITH_HELP: ClassVar[bool] = True
    FAILURE_PANELS: ClassVar[dict[str, str]] = {}
    """Worker group -> the id of the widget it fills: a failed worker's line is shown there (tui/failures.py)."""

    @classmethod
    def registry(cls) -> tuple[Act, ...]:
        return (HELP_ACT, *cls.ACTIONS) if cls.WITH_HELP else cls.ACTIONS

    @classmethod
    def _declare(cls) -> None:
        registry = cls.registry()
        check_keys(cls.__name__, registry, has_input=cls.HAS_INPUT)
        for act in registry:
            if "." not in act.method and not hasattr(cls, f"action_{act.method}"):
                raise KeyClash(f"{cls.__name__}: no method action_{act.method} for {act.keys} ({act.name})")
        cls.BINDINGS = [act.binding() for act in registry]  # type: ignore[attr-defined]
        cls.COMMANDS = {ScreenActions}  # type: ignore[attr-defined]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker of this screen failed: say why where it was working, and in a notification."""
        worker = event.worker
        if event.state != WorkerState.ERROR or worker.error is None or id(worker) in self._failed_workers:
            return
        self._failed_workers.add(id(worker))
        screen: Any = self
        title, line = failure_line(worker.error, f"{type(self).__name__} ({worker.group or worker.name})")
        panel = self.FAILURE_PANELS.get(worker.group)
        if panel is not None:
            with contextlib.suppress(NoMatches):
                show_in_panel(screen.query_one(panel), line)
        self.worker_failed(worker.group, line)
        screen.notify(line, title=title, severity="error", timeout=15)

    def worker_failed(self, group: str, line: str) -> None:
        """A screen's own clean-up after a failed worker (a loading flag, a banner); nothing by default."""

    @property
    def _failed_workers(self) -> set[int]:
        seen: set[int] | None = self.__dict__.get("_failed")
        if seen is None:
            seen = self.__dict__["_failed"] = set()
        return seen

    def action_show_help(self) -> None:
        screen: Any = self
        screen.app.push_screen(HelpScreen(type(self)))


class ActionScreen(_Declares, Screen[None]):
    """A screen whose bindings, footer, help and palette entries come from `ACTIONS`."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init_subclass__(cls, **kw: Any) -> None:
        cls._declare()  # before Textual's own __init_subclass__ merges BINDINGS
        super().__init_subclass__(**kw)


class ActionModal(_Declares, ModalScreen[Any]):
    """A modal screen declaring its actions the same way, with a footer of its own: the keys go to the
    modal alone, so the footer of the screen below (still drawn under it) would list keys that do nothing."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init_subclass__(cls, **kw: Any) -> None:
        cls._declare()  # before Textual's own __init_subclass__ merges BINDINGS
        cls.BINDINGS = [*cls.BINDINGS, PALETTE_IN_MODAL]
        super().__init_subclass__(**kw)

    @on(events.Mount)
    def _own_footer(self) -> None:
        self.mount(FittingFooter())


class ScreenActions(Provider):
    """The command palette's entries for the screen it was opened over: one per registered action."""

    def _entries(self) -> list[tuple[Act, Text]]:
        out = []
        for act in all_actions(self.screen):
            if self.screen.check_action(act.method, ()) is False:
                continue
            out.append((act, Text.assemble((act.name, "bold"), f"  {act.label}")))
        return out

    def _run(self, act: Act) -> Any:
        return functools.partial(self.screen.run_action, act.action)

    async def discover(self) -> Hits:
        for act, display in self._entries():
            yield DiscoveryHit(display, self._run(act), text=act.name, help=act.sentence)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for act, _display in self._entries():
            by_name = matcher.match(act.name)
            by_words = max((matcher.match(w) for w in act.search_text().split()), default=0.0) * 0.9
            score = max(by_name, by_words)
            if score > 0:
                display = matcher.highlight(act.name) + Content(f"  {act.label}")
                yield Hit(score, display, self._run(act), text=act.name, help=act.sentence)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def help_markdown(owner: type[_Declares]) -> str:
    """`?` help of a screen class: its intro, every registered action, the moving keys, the palette."""
    lines = [f"# {owner.HELP_TITLE or owner.__name__}", ""]
    if owner.HELP_INTRO:
        lines += [owner.HELP_INTRO.strip(), ""]
    lines += ["| key | action | what it does |", "|---|---|---|"]
    lines += [f"| {_cell(a.label)} | {_cell(a.name)} | {_cell(a.sentence)} |" for a in owner.registry()]
    if owner.NAV:
        lines += ["", "| key | moves |", "|---|---|"]
        lines += [f"| {_cell(n.keys)} | {_cell(n.what)} |" for n in owner.NAV]
    lines += ["", "Ctrl+P opens the command palette: every action above, found by what it does "
              "(try “fork”, “sweep”, “resume”, “profile”). Ctrl+Q quits."]  # fmt: skip
    return "\n".join(lines)


class HelpScreen(ActionModal):
    """`?` / F1: made from the registry of the screen it was opened over."""

    CSS_PATH = str(Path(__file__).with_name("help.tcss"))
    WITH_HELP = False
    ACTIONS = (Act("escape,q,question_mark,f1", "close", "Close", "Close the help.", "close back"),)

    def __init__(self, owner: type[_Declares]) -> None:
        super().__init__()
        self.owner = owner

    def compose(self) -> ComposeResult:
        # the Markdown widget (markdown-it, pygments) loads when a help opens, not before the first frame
        from textual.widgets import Markdown

        with VerticalScroll(id="help"):
            yield Markdown(help_markdown(self.owner))

    def action_close(self) -> None:
        self.dismiss(None)
