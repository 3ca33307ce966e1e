"""Reading a project's YAML files as zymi does: UTF-8 text, YAML 1.2 booleans, files sorted by name."""

from __future__ import annotations

import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from zymi_tui.project.errors import ProjectError

if TYPE_CHECKING:
    import yaml

# PyYAML's reader (yaml/reader.py) compiles, as it is imported, the characters YAML may not hold as
# "anything but these 1.1 million code points": 57 M instructions of `re`'s compiler, 60% of importing
# PyYAML, though libyaml's parser (ours) never uses it. The same set written as the few code points it
# holds compiles in ~0.1 M: `import_yaml` puts that one in `re`'s cache under the pattern PyYAML asks for.
YAML_NON_PRINTABLE = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
NON_PRINTABLE_LISTED = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"


def import_yaml() -> ModuleType:
    """PyYAML, imported with its reader's class of non-printable characters compiled the cheap way
    (tests/test_yaml_import.py checks that both spellings match the same code points). Where `re` keeps
    no such cache (another Python), PyYAML compiles its own, as it always did."""
    if "yaml" not in sys.modules:
        cache = getattr(re, "_cache", None)
        if isinstance(cache, dict):
            cache.setdefault((str, YAML_NON_PRINTABLE, 0), re.compile(NON_PRINTABLE_LISTED))
    import yaml

    return yaml


@cache
def _yaml12_loaders() -> tuple[type[yaml.SafeLoader] | type[yaml.CSafeLoader], type[yaml.SafeLoader]]:
    """YAML 1.2 booleans, as zymi's serde_yml reads them: only true/false (`on:`, `yes`, `no` stay strings).

    Two loaders with the same resolvers: libyaml's parser (the C one PyYAML ships; zymi's YAML reader is
    libyaml's port), and PyYAML's own, which reads a file libyaml refused so that the error names the
    problem in the words it always did. Made (and PyYAML imported) on the first parse: a command that
    finds no project.yml never pays for it."""
    import_yaml()
    import yaml

    class Fast(yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader):  # type: ignore[misc]
        pass

    class Exact(yaml.SafeLoader):
        pass

    for loader in (Fast, Exact):
        loader.yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
        loader.add_implicit_resolver(
            "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
        )
    fast: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = Fast
    exact: type[yaml.SafeLoader] = Exact
    return fast, exact


def parse_yaml(text: str, path: Path) -> Any:
    """The document in `text`; ProjectError naming the file, line and column when it is not YAML."""
    import_yaml()  # on the first parse, as in `_yaml12_loaders`
    import yaml

    fast, exact = _yaml12_loaders()
    try:
        return yaml.load(text, Loader=fast)
    except yaml.YAMLError:
        pass  # read again by PyYAML's parser below: the error is told in its words
    try:
        return yaml.load(text, Loader=exact)
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
