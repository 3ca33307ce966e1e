"""bashlex with its stored parse tables parses exactly as bashlex with the tables it builds itself.

Each side runs in a process of its own (bashlex's parser is a module-level singleton)."""

from __future__ import annotations

import json
import subprocess
import sys

COMMANDS = [
    "ls -la",
    "cat a | grep b > /dev/null 2>&1",
    "echo $(rm -rf /) `id`",
    'echo "$(cat ~/.ssh/id_rsa)"',
    "for i in 1 2; do echo $i; done",
    "if true; then x=1; elif false; then y=2; else z=3; fi",
    "a && b || c; d &",
    "cat <(ls) >(wc -l)",
    "sudo env X=1 /bin/rm -rf ~/x",
    "(cd /; ls) | { read a; echo $a; }",
    "echo 'it''s' \"q $HOME\" \\rm",
    'while read l; do echo "$l"; done < f >> g',
    "case x in a) echo 1 ;; *) echo 2 ;; esac",
    "f() { :; }",
    "echo ${x:-y} $((1 + 2))",
    "seq 1 5 | tee /tmp/x",
    "dd if=/dev/zero of=/dev/sda bs=1M",
    ":(){ :|:& };:",
    "echo )",
    "ls ((",
    "cat <<EOF\nx\nEOF\n",
    "until false; do break; done; select x in a b; do echo; done",
]

SCRIPT = """
import json, sys
commands = json.loads(sys.stdin.read())
if sys.argv[1] == "stored":
    from zymi_tui.engine import bash_parser
    stored = bash_parser._read_tables()
    bashlex = bash_parser.load()
    pdict = vars(sys.modules["bashlex.parser"])
    used = stored is not None and stored["fingerprint"] == bash_parser.fingerprint(pdict)
else:
    import bashlex
    used = False
out = []
for c in commands:
    try:
        out.append([t.dump() for t in bashlex.parse(c)])
    except Exception as e:
        out.append(type(e).__name__ + ": " + str(e))
print(json.dumps({"used": used, "parsed": out}))
"""


def parse_all(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], input=json.dumps(COMMANDS), capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_stored_tables_fit_the_installed_bashlex_and_parse_the_same() -> None:
    stored, built = parse_all("stored"), parse_all("built")
    # a bashlex upgrade with another grammar: run scripts/bashlex_tables.py
    assert stored["used"] is True
    assert stored["parsed"] == built["parsed"]
    parsed = stored["parsed"]
    assert isinstance(parsed, list) and any(isinstance(p, str) for p in parsed)  # the corpus has parse errors too
