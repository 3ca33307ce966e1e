"""`${...}` placeholders at run time (docs/engine.md#templating); load-time passes: zymi_tui.project.templating."""

from __future__ import annotations

import re
from collections.abc import Mapping


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
