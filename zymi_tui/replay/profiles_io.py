"""Profiles on disk: the user's saved knob sets, the `runtime.context:` block for project.yml, and
writing that block into a project.yml by editing its text (comments and everything else kept)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from zymi_tui.context.knobs import KNOB_NAMES, config_dir
from zymi_tui.errors import UserError

KnobValues = Mapping[str, int | None]
PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ProfileFileError(UserError):
    """A profile or project file that cannot be read or written; one line naming file and problem."""

    title = "Profiles"


def profiles_file() -> Path:
    """The user's profiles: `name: {knob: value, ...}` per profile (read by the context engine too)."""

    return config_dir() / "profiles.yml"


def check_profile_name(name: str, reserved: tuple[str, ...] = ()) -> str:
    if not PROFILE_NAME.match(name):
        raise ProfileFileError(
            f"profile name `{name}`: use letters, digits, `_`, `-` or `.` (up to 64, starting with a letter or digit)"
        )
    if name in reserved:
        raise ProfileFileError(f"profile name `{name}` is built in; choose another name")
    return name


def _knob_lines(values: KnobValues, indent: str) -> list[str]:
    lines = []
    for key in KNOB_NAMES:
        value = values.get(key)
        if value is None:
            lines.append(f"{indent}# {key}: null  # off (engine default)")
        else:
            lines.append(f"{indent}{key}: {int(value)}")
    return lines


def runtime_context_block(values: KnobValues) -> str:
    """The exact `runtime: context:` block to paste into project.yml."""
    return "\n".join(["runtime:", "  context:", *_knob_lines(values, "    ")]) + "\n"


def save_profile(name: str, values: KnobValues, *, reserved: tuple[str, ...] = (), path: Path | None = None) -> Path:
    """Add or replace profile `name` in the user's profiles.yml, editing its text (other profiles and
    comments kept)."""
    check_profile_name(name, reserved)
    path = path or profiles_file()
    try:
        old = path.read_text(encoding="utf-8") if path.exists() else "# zymi-tui context profiles: name -> knobs\n"
    except OSError as e:
        raise ProfileFileError(f"{path}: cannot read ({e.strerror or e})") from None
    lines = old.splitlines()
    block = [f"{name}:", *_knob_lines(values, "  ")]
    at = next((i for i, line in enumerate(lines) if (m := _TOP_KEY.match(line)) and m.group(1) == name), None)
    if at is None:
        lines += block
    else:
        lines[at : _block_end(lines, at, 0)] = block
    new = "\n".join(lines) + "\n"
    try:
        doc = yaml.safe_load(new)
    except yaml.YAMLError:
        raise ProfileFileError(f"{path}: not valid YAML; fix it by hand first") from None
    want = {k: v for k, v in values.items() if v is not None}
    if not isinstance(doc, dict) or doc.get(name) != want:
        raise ProfileFileError(f"{path}: could not place profile `{name}` safely; nothing written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(path, new)
    except OSError as e:
        raise ProfileFileError(f"{path}: cannot save the profile ({e.strerror or e})") from None
    return path


# -- apply to project.yml ------------------------------------------------------------------------
_TOP_KEY = re.compile(r"^([A-Za-z_][\w-]*)\s*:(.*)$")
_CHILD_KEY = re.compile(r"^(\s+)([A-Za-z_][\w-]*)\s*:(.*)$")


@dataclass(frozen=True)
class ProjectEdit:
    """A planned change to project.yml: shown first, written only after confirmation."""

    path: Path
    old_text: str
    new_text: str

    @property
    def changed(self) -> bool:
        return self.old_text != self.new_text


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """Index after the last line belonging to the block opened at `start` (deeper-indented lines)."""
    end = start + 1
    last_content = start
    while end < len(lines):
        line = lines[end]
        if _is_content(line):
            if len(line) - len(line.lstrip(" ")) <= indent:
                break
            last_content = end
        end += 1
    return last_content + 1


def _inline_value(rest: str) -> str:
    return rest.split(" #", 1)[0].strip()


def _edit_context_block(lines: list[str], ctx: int, values: KnobValues) -> list[str]:
    ctx_indent = len(lines[ctx]) - len(lines[ctx].lstrip(" "))
    end = _block_end(lines, ctx, ctx_indent)
    child_indent: str | None = None
    seen: set[str] = set()
    out = lines[: ctx + 1]
    for line in lines[ctx + 1 : end]:
        m = _CHILD_KEY.match(line)
        if m and len(m.group(1)) > ctx_indent and (child_indent is None or m.group(1) == child_indent):
            child_indent = m.group(1)
            key = m.group(2)
            if key in KNOB_NAMES:
                seen.add(key)
                value = values.get(key)
                comment = ""
                if " #" in m.group(3):
                    comment = "  #" + m.group(3).split(" #", 1)[1]
                if value is None:
                    out.append(f"{child_indent}{key}: null{comment}")
                else:
                    out.append(f"{child_indent}{key}: {int(value)}{comment}")
                continue
        out.append(line)
    indent = child_indent or " " * (ctx_indent + 2)
    missing = [f"{indent}{k}: {int(v)}" for k in KNOB_NAMES if k not in seen and (v := values.get(k)) is not None]
    return out + missing + lines[end:]


def plan_apply(path: Path, values: KnobValues) -> ProjectEdit:
    """The new text of project.yml with `runtime.context` set to `values`; nothing is written.

    The file is edited as text: knob lines are rewritten in place (their comments kept), missing
    knobs are added to the block, a missing block or `runtime:` is added; every other line is kept.
    The result is parsed back and must give exactly these knobs, else nothing is planned."""
    try:
        old = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ProfileFileError(f"{path}: cannot read project.yml ({e.strerror or e})") from None
    lines = old.splitlines()
    runtime = next((i for i, line in enumerate(lines) if (m := _TOP_KEY.match(line)) and m.group(1) == "runtime"), None)
    if runtime is None:
        new_lines = [*lines]
        if new_lines and new_lines[-1].strip():
            new_lines.append("")
        new_lines += runtime_context_block(values).splitlines()
    else:
        if _inline_value(_TOP_KEY.match(lines[runtime]).group(2)):  # type: ignore[union-attr]
            raise ProfileFileError(f"{path}: `runtime:` is written inline (flow style); paste the block by hand")
        end = _block_end(lines, runtime, 0)
        ctx = None
        for i in range(runtime + 1, end):
            m = _CHILD_KEY.match(lines[i])
            if m and m.group(2) == "context":
                ctx = i
                break
        if ctx is not None:
            m = _CHILD_KEY.match(lines[ctx])
            assert m is not None
            if _inline_value(m.group(3)):
                raise ProfileFileError(f"{path}: `runtime.context:` is written inline; paste the block by hand")
            new_lines = _edit_context_block(lines, ctx, values)
        else:
            child = next((m.group(1) for i in range(runtime + 1, end) if (m := _CHILD_KEY.match(lines[i]))), "  ")
            block = [f"{child}context:", *(f"{child}{line}" for line in _knob_lines(values, "  "))]
            new_lines = lines[: runtime + 1] + block + lines[runtime + 1 :]
    new = "\n".join(new_lines) + ("\n" if old.endswith("\n") or not old else "")
    _check_result(path, new, values)
    return ProjectEdit(path, old, new)


def _check_result(path: Path, text: str, values: KnobValues) -> None:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise ProfileFileError(f"{path}: the edited file would not be valid YAML; nothing written") from None
    ctx = ((doc or {}).get("runtime") or {}).get("context") if isinstance(doc, dict) else None
    got = {k: (ctx or {}).get(k) for k in KNOB_NAMES}
    want = {k: values.get(k) for k in KNOB_NAMES}
    if got != want:
        raise ProfileFileError(
            f"{path}: could not place the knobs safely (the edit reads back as {got}); nothing written"
        )


def backup_path(path: Path) -> Path:
    candidate = path.with_name(path.name + ".bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak{n}")
        n += 1
    return candidate


def apply_edit(edit: ProjectEdit) -> Path:
    """Write the planned text after a backup of the current file; returns the backup's path.

    Refuses when the file changed since the edit was planned."""
    try:
        current = edit.path.read_text(encoding="utf-8")
        if current != edit.old_text:
            raise ProfileFileError(f"{edit.path}: changed on disk since the edit was shown; nothing written")
        backup = backup_path(edit.path)
        shutil.copy2(edit.path, backup)
        _write_atomically(edit.path, edit.new_text)
    except OSError as e:
        raise ProfileFileError(f"{edit.path}: cannot write ({e.strerror or e})") from None
    return backup


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
