"""Load-time `${...}` passes over a project's raw YAML text (docs/engine.md#templating; comment lines stay).

project.yml sees only `${env.NAME}`; agents, pipelines and tools also see `${project.name}`,
`${project.version}` and `variables:`. Runtime keys (`inputs.`, `args.`, `steps.`) stay literal
for the engine. Strict passes (the engine's loader) fail on the first unresolved placeholder;
the lenient pass (the reader) leaves it as written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from zymi_tui.project.errors import ProjectError

PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
RUNTIME_PREFIXES = ("inputs.", "args.", "steps.")


class TemplateError(ProjectError):
    """An unresolved placeholder at load time."""


def _sub_lines(text: str, resolve: Callable[[re.Match[str]], str]) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        out.append(line if line.lstrip().startswith("#") else PLACEHOLDER.sub(resolve, line))
    return "".join(out)


def resolve_env_only(text: str, path: str, env: Mapping[str, str] | None = None) -> str:
    """project.yml: only `${env.NAME}`; the first unset one (file order) is an error."""
    environ = os.environ if env is None else env

    def resolve(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        if not key.startswith("env."):
            return m.group(0)
        name = key[4:]
        if name not in environ:
            raise TemplateError(f"unresolved template variable `${{{key}}}` in {path}")
        return environ[name]

    return _sub_lines(text, resolve)


def resolve_full(
    text: str, path: str, variables: Mapping[str, str], env: Mapping[str, str] | None = None, *, strict: bool = True
) -> str:
    """agents, pipelines, tools: env, project.*, variables; runtime keys stay literal.

    strict=False leaves an unresolved placeholder as written instead of failing."""
    environ = os.environ if env is None else env

    def resolve(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        if key.startswith(RUNTIME_PREFIXES):
            return m.group(0)
        if key.startswith("env.") and key[4:] in environ:
            return environ[key[4:]]
        if not key.startswith("env.") and key in variables:
            return variables[key]
        if not strict:
            return m.group(0)
        raise TemplateError(f"unresolved template variable `${{{key}}}` in {path}")

    return _sub_lines(text, resolve)
