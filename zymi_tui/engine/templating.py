"""`${...}` placeholders: load-time passes over raw YAML text and runtime substitution (docs/engine.md#templating)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
RUNTIME_PREFIXES = ("inputs.", "args.", "steps.")


class TemplateError(ValueError):
    """An unresolved placeholder at load time."""


def _is_comment_line(line: str) -> bool:
    return line.lstrip().startswith("#")


def _sub_lines(text: str, resolve: Callable[[re.Match[str]], str]) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        out.append(line if _is_comment_line(line) else PLACEHOLDER.sub(resolve, line))
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


def resolve_full(text: str, path: str, variables: Mapping[str, str], env: Mapping[str, str] | None = None) -> str:
    """agents, pipelines, tools: env, project.*, variables; runtime keys stay literal."""
    environ = os.environ if env is None else env

    def resolve(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        if key.startswith(RUNTIME_PREFIXES):
            return m.group(0)
        if key.startswith("env."):
            if key[4:] not in environ:
                raise TemplateError(f"unresolved template variable `${{{key}}}` in {path}")
            return environ[key[4:]]
        if key in variables:
            return variables[key]
        raise TemplateError(f"unresolved template variable `${{{key}}}` in {path}")

    return _sub_lines(text, resolve)


def substitute(text: str, inputs: Mapping[str, str], outputs: Mapping[str, str], *, cut: int | None = None) -> str:
    """Runtime: `${inputs.K}` and `${steps.X.output}` (outputs optionally cut to `cut` bytes)."""
    for key, value in inputs.items():
        text = text.replace("${inputs." + key + "}", value)
    for step, value in outputs.items():
        text = text.replace("${steps." + step + ".output}", value if cut is None else cut_bytes(value, cut))
    return text


def cut_bytes(text: str, limit: int) -> str:
    """The longest prefix of `text` that fits in `limit` UTF-8 bytes (floored to a char boundary)."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    return raw[:limit].decode("utf-8", errors="ignore")


STEP_REF = re.compile(r"\$\{\s*steps\.([^.}\s]+)\.output\s*\}")
