"""PyYAML imported the cheap way (zymi_tui.project.yamlfile.import_yaml): its reader's class of
non-printable characters, which PyYAML compiles from a 1.1-million-code-point negated class, is handed
to it already compiled from the few code points that class holds. Checked against PyYAML itself: the
pattern it asks for is the one seeded, and both spellings match exactly the same code points."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from zymi_tui.project.errors import ProjectError
from zymi_tui.project.yamlfile import NON_PRINTABLE_LISTED, YAML_NON_PRINTABLE, parse_yaml


def _reader_pattern(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport yaml.reader\nprint(ascii(yaml.reader.Reader.NON_PRINTABLE.pattern))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return str(eval(done.stdout))  # an ascii() repr of a str


def test_pyyaml_asks_for_the_pattern_that_is_seeded() -> None:
    assert _reader_pattern("import yaml") == YAML_NON_PRINTABLE


def test_import_yaml_gives_pyyaml_the_listed_spelling() -> None:
    seeded = _reader_pattern("from zymi_tui.project.yamlfile import import_yaml\nimport_yaml()")
    assert seeded == NON_PRINTABLE_LISTED


def test_both_spellings_match_the_same_code_points() -> None:
    every = "".join(map(chr, range(0x110000)))  # lone surrogates included: a str may hold them
    negated = [m.start() for m in re.finditer(YAML_NON_PRINTABLE, every)]
    listed = [m.start() for m in re.finditer(NON_PRINTABLE_LISTED, every)]
    assert negated == listed
    assert 0 in listed and 0x7F in listed and 0xFFFE in listed and 0x85 not in listed  # not vacuous


def test_a_file_with_a_control_character_is_still_refused_in_pyyamls_words(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as e:
        parse_yaml("name: a\x07b\n", tmp_path / "project.yml")
    assert "special characters are not allowed" in e.value.message, e.value.message
