"""The `.gitignore` lines every project folder we write gets (zymi's scaffold writes the same)."""

from __future__ import annotations

from pathlib import Path

GITIGNORE_LINES = [".venv/", ".zymi/", "__pycache__/"]


def ensure_gitignore(root: Path) -> None:
    """Append the lines `<root>/.gitignore` lacks (the file is created when missing)."""
    path = root / ".gitignore"
    have = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    missing = [line for line in GITIGNORE_LINES if line not in have]
    if missing:
        with path.open("a", encoding="utf-8") as f:
            if have and have[-1] != "":
                f.write("\n")
            f.write("\n".join(missing) + "\n")
