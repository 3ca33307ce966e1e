"""The context knobs (zymi's `runtime.context`), the built-in profiles and the user's profiles.

Sources, lowest first: engine defaults or the project's `runtime.context:`, then `--profile P`
(a built-in or one from `<config dir>/profiles.yml`), then each `--set KNOB=VALUE`. A bad value
raises `KnobError` with one line naming the key, the value and the rule it breaks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec

from zymi_tui.errors import UserError
from zymi_tui.project.reader import Project
from zymi_tui.project.validation import Refused, check, convert
from zymi_tui.project.yamlfile import import_yaml

KNOB_NAMES = ("observation_window", "soft_cap_chars", "hard_cap_chars", "min_tail_turns", "forget_after_turns")
KnobDict = dict[str, int | None]  # the five knobs by name (profiles, exports, sweeps, advice); None: unset


class KnobError(UserError):
    """A knob, profile or profiles file that cannot be used; the message is one line."""

    title = "Knobs"


Knob = Annotated[int, msgspec.Meta(ge=0)]  # zymi's usize


class ContextKnobs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """zymi's `ContextConfig` (context_builder.rs): every size is in UTF-8 bytes. Made from settings by
    `make_knobs` (which checks them); made in code from constants, or `knobs.replaced(...)`."""

    observation_window: Knob = 10
    soft_cap_chars: Knob = 400_000
    hard_cap_chars: Knob = 600_000
    min_tail_turns: Knob = 4
    forget_after_turns: Knob | None = None

    def __post_init__(self) -> None:  # run by msgspec.convert, as by the constructor
        if self.hard_cap_chars < self.soft_cap_chars:
            raise ValueError(f"hard_cap_chars={self.hard_cap_chars}: must be >= soft_cap_chars ({self.soft_cap_chars})")

    def values(self) -> dict[str, int | None]:
        """The knobs by name, in declaration order (the `knobs` recorded with a run)."""
        return msgspec.structs.asdict(self)

    def replaced(self, **changes: int | None) -> ContextKnobs:
        return msgspec.structs.replace(self, **changes)

    def describe(self) -> str:
        return describe_knobs(self.values())


def describe_knobs(values: Mapping[str, object]) -> str:
    """Knob values in one line, the way every screen and command shows them (`forget off` for None)."""
    short = {"observation_window": "window", "soft_cap_chars": "soft", "hard_cap_chars": "hard",
             "min_tail_turns": "min_tail", "forget_after_turns": "forget"}  # fmt: skip
    parts = []
    for key, value in values.items():
        shown = "off" if key == "forget_after_turns" and value is None else value
        parts.append(f"{short.get(key, key)} {shown}")
    return ", ".join(parts)


PROFILES: dict[str, ContextKnobs] = {
    "coding": ContextKnobs(),
    "chat": ContextKnobs(
        observation_window=2, soft_cap_chars=40_000, hard_cap_chars=80_000, min_tail_turns=2, forget_after_turns=12
    ),
    "eval": ContextKnobs(observation_window=4, soft_cap_chars=60_000, hard_cap_chars=100_000, min_tail_turns=2),
}


def make_knobs(values: dict[str, Any], where: str) -> ContextKnobs:
    """Validate a mapping of knobs (missing ones take the engine defaults); `where` names their source."""
    unknown = [str(k) for k in values if k not in KNOB_NAMES]
    if unknown:
        raise KnobError(f"{where}: unknown knob `{unknown[0]}`; known knobs: {', '.join(KNOB_NAMES)}")
    for name, value in values.items():  # one by one: the message names the knob and its value
        kind = Knob | None if name == "forget_after_turns" else Knob
        try:
            check(value, kind)
        except Refused:
            accepted = "an integer >= 0" + (" or null (off)" if name == "forget_after_turns" else "")
            raise KnobError(f"{where}: {name}={value!r}: must be {accepted}") from None
    try:
        return convert(values, ContextKnobs)
    except Refused as e:  # the caps' order, checked by `__post_init__`
        raise KnobError(f"{where}: {e.problem}") from None


def project_knobs(project: Project) -> ContextKnobs:
    """The project's `runtime.context:` (engine defaults when absent; unknown keys ignored, as zymi does)."""
    return section_knobs(project.context_section, project.file)


def section_knobs(section: Any, project_file: Path) -> ContextKnobs:
    """A `runtime.context:` section as written in `project_file` (None: the engine defaults)."""
    if section is None:
        return ContextKnobs()
    if not isinstance(section, dict):
        raise KnobError(f"{project_file}: runtime.context must be a mapping of knobs, got {section!r}")
    known = {k: v for k, v in section.items() if k in KNOB_NAMES}
    return make_knobs(known, f"{project_file} runtime.context")


def config_dir() -> Path:
    """`$ZYMI_TUI_CONFIG_DIR`, else `$XDG_CONFIG_HOME/zymi-tui`, else `~/.config/zymi-tui`."""
    if os.environ.get("ZYMI_TUI_CONFIG_DIR"):
        return Path(os.environ["ZYMI_TUI_CONFIG_DIR"])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "zymi-tui"


def user_profiles() -> dict[str, ContextKnobs]:
    """Profiles from `<config dir>/profiles.yml`: `name: {knob: value, ...}` (missing knobs: defaults)."""
    path = config_dir() / "profiles.yml"
    if not path.is_file():
        return {}
    yaml = import_yaml()  # PyYAML on its first use (zymi_tui.project.yamlfile)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise KnobError(f"{path}: cannot read it: {str(e).splitlines()[0]}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KnobError(f"{path}: expected a mapping of profile name -> knobs")
    out: dict[str, ContextKnobs] = {}
    for name, values in doc.items():
        if not isinstance(values, dict):
            raise KnobError(f"{path}: profile `{name}` must be a mapping of knobs, got {values!r}")
        out[str(name)] = make_knobs(values, f"{path} profile `{name}`")
    return out


def all_profiles() -> dict[str, ContextKnobs]:
    """Built-in profiles, then the user's (a user profile may redefine a built-in one)."""
    return {**PROFILES, **user_profiles()}


def parse_set(item: str) -> tuple[str, int | None]:
    """`KNOB=VALUE` -> (knob, value); `forget_after_turns=off|none|null` -> None."""
    key, sep, raw = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise KnobError(f"--set {item!r}: expected KNOB=VALUE, e.g. --set observation_window=4")
    if key not in KNOB_NAMES:
        raise KnobError(f"--set {item!r}: unknown knob `{key}`; known knobs: {', '.join(KNOB_NAMES)}")
    raw = raw.strip()
    if key == "forget_after_turns" and raw.lower() in ("off", "none", "null", ""):
        return key, None
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        accepted = "an integer >= 0" + (" or off" if key == "forget_after_turns" else "")
        raise KnobError(f"--set {key}={raw!r}: not an integer; accepted: {accepted}") from None
    return key, value


def resolve_knobs(
    base: ContextKnobs, profile: str | None, sets: list[str], *, named_by: str = "--profile"
) -> ContextKnobs:
    """`base`, replaced by `--profile P` if given, then each `--set KNOB=VALUE` applied in order. An unknown
    profile's error names it as the user gave it (`named_by`: the option, or the box it was typed in)."""
    knobs = base
    if profile is not None:
        profiles = all_profiles()
        if profile not in profiles:
            raise KnobError(f"{named_by} {profile!r}: unknown profile; known profiles: {', '.join(sorted(profiles))}")
        knobs = profiles[profile]
    if not sets:
        return knobs
    values: dict[str, Any] = knobs.values()
    for item in sets:
        key, value = parse_set(item)
        values[key] = value
    return make_knobs(values, "--set")
