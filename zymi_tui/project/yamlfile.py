"""Reading a project's YAML files as zymi does: UTF-8 text, YAML 1.2 booleans, files sorted by name."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zymi_tui.project.errors import ProjectError

if TYPE_CHECKING:
    import yaml


@cache
def _yaml12_loader() -> type[yaml.SafeLoader]:
    """YAML 1.2 booleans, as zymi's serde_yml reads them: only true/false (`on:`, `yes`, `no` stay strings).

    Made (and PyYAML imported) on the first parse: a command that finds no project.yml never pays for it."""
    import yaml

    class Yaml12Loader(yaml.SafeLoader):
        pass

    Yaml12Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Yaml12Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return Yaml12Loader


def parse_yaml(text: str, path: Path) -> Any:
    """The document in `text`; ProjectError naming the file, line and column when it is not YAML."""
    import yaml  # on the first parse, as in `_yaml12_loader`

    try:
        return yaml.load(text, Loader=_yaml12_loader())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise ProjectError(f"invalid YAML in {path}: {problem}{where}") from None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProjectError(f"cannot read {path}: {e}") from None


def yaml_files(folder: Path) -> list[Path]:
    """`*.yml` and `*.yaml` files of a folder, sorted by name (none when it is not a folder)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
