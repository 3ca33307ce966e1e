"""zymi's `when:` expressions (src/config/when_expr.rs): `A == B && C != 'd' || ...`.

Left to right, `&&` and `||` of equal precedence; values are 'single-quoted' (no escapes) or bare
tokens that run to whitespace or an operator.
"""

from __future__ import annotations

import msgspec


class WhenError(ValueError):
    """A parse error, worded as zymi words it."""


class Comparison(msgspec.Struct, frozen=True):
    left: str
    op: str
    right: str

    def evaluate(self) -> bool:
        return (self.left == self.right) == (self.op == "==")


class WhenExpr(msgspec.Struct, frozen=True):
    first: Comparison
    rest: tuple[tuple[str, Comparison], ...]

    def evaluate(self) -> bool:
        value = self.first.evaluate()
        for op, comp in self.rest:
            value = (value and comp.evaluate()) if op == "&&" else (value or comp.evaluate())
        return value


_OPS = ("==", "!=", "&&", "||")


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _value(self) -> str:
        self._skip()
        if self.pos >= len(self.text):
            raise WhenError(f"expected value at position {self.pos}")
        if self.text[self.pos] == "'":
            start = self.pos
            end = self.text.find("'", self.pos + 1)
            if end < 0:
                raise WhenError(f"unterminated string starting at position {start}")
            self.pos = end + 1
            return self.text[start + 1 : end]
        start = self.pos
        while (
            self.pos < len(self.text)
            and not self.text[self.pos].isspace()
            and self.text[self.pos : self.pos + 2] not in _OPS
        ):
            self.pos += 1
        if self.pos == start:
            raise WhenError(f"expected value at position {self.pos}")
        return self.text[start : self.pos]

    def _comparison(self) -> Comparison:
        left = self._value()
        self._skip()
        op = self.text[self.pos : self.pos + 2]
        if op not in ("==", "!="):
            raise WhenError(f"expected comparison operator (`==` or `!=`) at position {self.pos}")
        self.pos += 2
        return Comparison(left, op, self._value())

    def parse(self) -> WhenExpr:
        first = self._comparison()
        rest: list[tuple[str, Comparison]] = []
        while True:
            self._skip()
            if self.pos >= len(self.text):
                return WhenExpr(first, tuple(rest))
            op = self.text[self.pos : self.pos + 2]
            if op not in ("&&", "||"):
                if op in ("==", "!="):
                    raise WhenError(f"unexpected trailing input `{self.text[self.pos :]}` at position {self.pos}")
                raise WhenError(f"unexpected `{self.text[self.pos]}` at position {self.pos} (expected `&&` or `||`)")
            self.pos += 2
            rest.append((op, self._comparison()))


def parse_when(text: str) -> WhenExpr:
    return _Parser(text).parse()
