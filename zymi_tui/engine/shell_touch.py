"""What one simple command will touch: the files it reads, the trees it reads whole, the files it writes.

Known conservatively, from the command's name and its words once expanded (engine/shell_words.py):
every argument of a command is taken as a file it may read (a word that names no file costs nothing),
except for the commands that only print or test their words; a recursive reader (`grep -r`, `find`,
`cp -r`, `tar`, `rsync`, `du`, `ls -R`, …) reads every file under each argument; the writers write
their targets (`tee`, `dd of=`, `cp`/`mv`/`install`/`ln` destinations, `touch`, `mkdir`, `rm`, …).
A command whose effect cannot be read from its words (`find -exec`, `xargs`, `tar --to-command`)
is `opaque`: the caller asks.
"""

from __future__ import annotations

import msgspec

NO_READ = {"echo", "printf", "true", "false", "test", "[", "cd", "pushd", "popd", "pwd", "seq", "sleep", "exit"}
ALWAYS_TREE = {"find", "du", "tar", "rsync", "rg", "ag", "ack", "tree", "bsdtar", "scp", "duplicity", "rgrep"}
TREE_FLAGS = {  # a reader recursive only with one of these short flags (or --recursive)
    "grep": "rR", "egrep": "rR", "fgrep": "rR", "zgrep": "rR", "ls": "R", "cp": "rRa", "diff": "rR",
    "zip": "r", "chmod": "R", "chown": "R", "chgrp": "R",
}  # fmt: skip
TREE_LONG = {"--recursive", "--dereference-recursive", "--archive", "--directories=recurse", "-d=recurse"}
PATTERN_FIRST = {"grep", "egrep", "fgrep", "zgrep", "rgrep", "rg", "ag", "ack"}  # `grep PATTERN [FILE]...`
LAST_IS_WRITE = {"cp", "mv", "install", "ln", "rsync", "scp"}
ALL_WRITE = {"touch", "mkdir", "rm", "rmdir", "truncate", "shred", "chmod", "chown", "chgrp", "unlink"}
OPAQUE_FLAGS = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "sed": ("-i", "--in-place"),
    "tar": ("--to-command", "--checkpoint-action", "--use-compress-program", "-I", "--info-script", "-F",
            "--new-volume-script", "--rsh-command", "-T", "-X"),
}  # fmt: skip
FILE_LISTS = ("--files-from", "--files0-from", "--exclude-from")  # the files it reads, named in a file


class Touches(msgspec.Struct):
    reads: list[str] = msgspec.field(default_factory=list)
    trees: list[str] = msgspec.field(default_factory=list)
    writes: list[str] = msgspec.field(default_factory=list)
    opaque: str = ""  # why the command's effect cannot be told from its words


def _recursive(name: str, words: list[str]) -> bool:
    if name in ALWAYS_TREE:
        return True
    flags = TREE_FLAGS.get(name)
    if flags is None:
        return False
    for i, word in enumerate(words):
        if not word.startswith("-"):
            continue
        if word.startswith("--"):
            if word in TREE_LONG or word == "--directories" or word.startswith("--recursive"):
                return True
        elif any(c in flags for c in word[1:]):
            return True
        elif word[1:2] == "d" and (word == "-drecurse" or words[i + 1 : i + 2] == ["recurse"]):
            return True  # grep -d recurse
    return False


def _opaque(name: str, words: list[str]) -> str:
    if any(w.startswith(FILE_LISTS) for w in words if w.startswith("-")):
        return "the files it reads are named in another file"
    for flag in OPAQUE_FLAGS.get(name, ()):
        if any(w == flag or w.startswith(flag + "=") or (name == "sed" and w.startswith("-i")) for w in words):
            return f"`{name} {flag}`: what it runs, reads or writes is not in its words"
    return ""


def touches(name: str, words: list[list[str]], via_xargs: bool) -> Touches:
    """What `name` run with `words` (each argument's expansion, in order) touches."""
    out = Touches()
    if via_xargs:
        out.opaque = "`xargs` takes its arguments from its input"
        return out
    flat = [w for group in words for w in group]
    out.opaque = _opaque(name, flat)
    if name in NO_READ:
        return out
    options: list[str] = []
    args: list[str] = []
    ended = False
    for word in flat:
        if not ended and word == "--":
            ended = True
        elif not ended and word.startswith("-") and word != "-":
            options.append(word)
            if word.startswith("--") and "=" in word:
                args.append(word.split("=", 1)[1])  # `--file=X`: X is a file it may read
        else:
            args.append(word)
    for word in options:
        if name == "dd" and word.startswith("of="):
            out.writes.append(word[3:])
    for word in args:
        if name == "dd" and word.startswith("of="):
            out.writes.append(word[3:])
        elif name == "dd" and word.startswith("if="):
            out.reads.append(word[3:])
    if name == "dd":
        return out
    if name == "tee":
        out.writes.extend(args)
        return out
    if name in ALL_WRITE:
        out.writes.extend(args)
        if not _recursive(name, flat):
            return out
    if name in LAST_IS_WRITE and len(args) >= 2:
        out.writes.append(args[-1])
        args = args[:-1]
    if not _recursive(name, flat):
        out.reads.extend(args)
        return out
    out.trees.extend(args)
    if not _roots(name, options, args):
        out.trees.append(".")  # `grep -r x`, `find`, `du`: the folder it runs in
    return out


def _roots(name: str, options: list[str], args: list[str]) -> list[str]:
    """The folders a recursive reader starts from, named on its line (its pattern left out)."""
    if name not in PATTERN_FIRST:
        return args
    given = sum(w in ("-e", "-f", "--regexp", "--file") for w in options)  # patterns given as options
    return args[given:] if given else args[1:]
