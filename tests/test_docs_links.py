"""Every `docs/<file>.md#anchor` the code, the tests or the docs point to exists, with that heading."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# `docs/engine.md#a, #b` and `docs/engine.md` alone; markdown links `(context.md#knobs)` and `(#knobs)`
CITE = re.compile(r"(?<![\w/])docs/(?P<file>[\w-]+\.md)(?P<anchors>(?:#[\w-]+(?:, ?#[\w-]+)*)?)")
MD_LINK = re.compile(r"\]\((?P<file>[\w-]+\.md)?(?P<anchor>#[\w-]+)?\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, flags=re.M)}


def cited() -> list[tuple[str, str, str]]:
    """(where, file, anchor or "") for every citation in the package, the tests and the docs."""
    out = []
    for path in [*(ROOT / "zymi_tui").rglob("*.py"), *(ROOT / "tests").glob("*.py"), ROOT / "README.md"]:
        if path.name == "test_docs_links.py":
            continue
        for m in CITE.finditer(path.read_text(encoding="utf-8")):
            names = re.findall(r"#([\w-]+)", m.group("anchors")) or [""]
            out += [(str(path.relative_to(ROOT)), m.group("file"), a) for a in names]
    for doc in DOCS.glob("*.md"):
        for m in MD_LINK.finditer(doc.read_text(encoding="utf-8")):
            target = m.group("file") or doc.name
            out.append((f"docs/{doc.name}", target, (m.group("anchor") or "#")[1:]))
    return out


def test_docs_cited_in_the_code_exist_with_their_sections() -> None:
    found = cited()
    assert len(found) > 30  # the package's comments cite the docs; this test reads them
    missing = [
        f"{where}: docs/{file}#{anchor}"
        for where, file, anchor in found
        if not (DOCS / file).is_file() or (anchor and anchor not in anchors(DOCS / file))
    ]
    assert missing == []


def test_serve_points_to_a_doc_that_has_the_profiles() -> None:
    # zymi's own hint line, kept word for word; here it points to our copy
    assert "see docs/context.md for chat/coding profiles" in (ROOT / "zymi_tui/commands/engine_cmds.py").read_text()
    assert {"profiles", "knobs"} <= anchors(DOCS / "context.md")


def test_the_code_cites_no_spec_outside_the_repository() -> None:
    # the specs' names, or a bare section sign (a standard's, `RFC 9112 §2.2`, is a public document)
    outside = re.compile(
        r"(?<!docs/)\b(engine|context-builder|observe-anchor|field-notes|prompt-caching)\.md\b|(?<!\bRFC \d{4} )§"
    )
    hits = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in [*(ROOT / "zymi_tui").rglob("*.py"), *(ROOT / "tests").glob("*.py")]
        if p.name != "test_docs_links.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if outside.search(line)
    ]
    assert hits == []
