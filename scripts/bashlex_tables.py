#!/usr/bin/env python3
"""Write zymi_tui/data/bashlex_tables.json: the LALR tables bashlex's grammar builds, with the grammar's
fingerprint (zymi_tui/engine/bash_parser.py reads them instead of building them at every start).

    .venv/bin/python scripts/bashlex_tables.py     # after a bashlex upgrade (a test says when)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zymi_tui.engine.bash_parser import compact, fingerprint, import_with, tables_path


def build() -> dict[str, Any]:
    """Import bashlex with its own generator, keeping the tables as `yacc()` returns them (before the
    fix-ups bashlex/parser.py applies to them afterwards)."""
    if "bashlex.parser" in sys.modules:
        raise RuntimeError("bashlex is already imported")
    out: dict[str, Any] = {}

    def replace(yacc: ModuleType) -> Callable[..., Any]:
        generate = yacc.yacc

        def capture(*args: Any, **kwargs: Any) -> Any:
            pdict = dict(sys._getframe(1).f_globals)  # bashlex.parser's (yacc() reads its caller's)
            parser = generate(*args, module=sys.modules[pdict["__name__"]], **kwargs)
            out["fingerprint"] = fingerprint(pdict)
            out["action"] = compact({s: dict(row) for s, row in parser.action.items()})
            out["goto"] = compact({s: dict(row) for s, row in parser.goto.items()})
            out["productions"] = [[p.str, p.name, p.len, p.func] for p in parser.productions]
            return parser

        capture.generate = generate  # type: ignore[attr-defined]
        return capture

    import_with(replace)
    if not out:
        raise RuntimeError("bashlex's parser did not call yacc.yacc()")
    return out


def main() -> int:
    path = tables_path()
    path.write_text(json.dumps(build(), separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
