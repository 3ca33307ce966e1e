"""`replay --json`'s line of one call: its object (`row_json`), and the same line written without the
object (`row_line`), as a replay writes one line per call of the store.

`row_line` writes what `JSON_LINE(row_json(row))` writes, byte for byte: the keys in the same order,
`, ` and `: ` between them, strings escaped by the encoder's own `encode_basestring`, integers as
`int.__repr__` writes them. It takes only the rows whose values are all plain (no messages, no value of an
unexpected type): it returns None for the others, which go through the object and the encoder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from zymi_tui.context.reuse import PrefixBreak
from zymi_tui.events.json_text import json_text
from zymi_tui.replay.cache import reuse_json
from zymi_tui.replay.call_context import CallContext

_text: Callable[[str], str] = json.encoder.encode_basestring  # the C one


def est_tokens(row: CallContext) -> int | None:
    return None if row.rendered is None else sum(e.tokens for e in row.rendered.entries)


JSON_LINE = json_text  # json.dumps(obj, ensure_ascii=False), a line per call


def row_json(row: CallContext, *, messages: bool, tokens: bool = True) -> dict[str, Any]:
    r = row.rendered
    obj: dict[str, Any] = {
        "stream_id": row.stream_id,
        "sequence": row.sequence,
        "global_id": row.global_id,
        "iteration": row.iteration,
        "kind": "hard_cap_failure" if row.hard_cap_failure else "compaction" if row.is_compaction else "agent",
        "recorded_chars": row.recorded_chars,
        "recorded_message_count": row.recorded_message_count,
        "recorded_input_tokens": row.recorded_input_tokens,
        "recorded_cached_input_tokens": row.recorded_cached_tokens,
        "recorded_cache_creation_tokens": row.recorded_cache_creation_tokens,
        **reuse_json(row),
        "chars": None if r is None else r.chars,
        "message_count": None if r is None else r.message_count,
        "estimated_tokens": est_tokens(row) if tokens else None,
        "hard_cap_exceeded": None if r is None else r.hard_cap_exceeded,
        "would_compact": None if r is None else r.compaction is not None,
        "prefix_inferred": row.prefix_inferred,
        "prefix_bytes": None if r is None else r.layer_bytes.get("A"),
        "prefix_basis": row.prefix_basis,
        "knobs_source": row.knobs_source,
        "simulated": row.simulated,
        "whatif": row.whatif,
    }
    if row.note:
        obj["note"] = row.note
    if messages and r is not None:
        obj["messages"] = r.wire()
    return obj


def _int(v: int | None) -> str:
    """An integer field (or null) as the encoder writes it; a value of another type is refused."""
    if v is None:
        return "null"
    if type(v) is not int:
        raise _NotPlain
    return int.__repr__(v)


def _bool(v: bool | None) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    raise _NotPlain


def _break(b: PrefixBreak | None) -> str:
    """A prefix break's object (or null) as the encoder writes it."""
    if b is None:
        return "null"
    if type(b.layer) is not str or type(b.cause) is not str:
        raise _NotPlain
    return (
        f'{{"index": {_int(b.index)}, "layer": {_text(b.layer)}, "source_seq": {_int(b.source_seq)}, '
        f'"cause": {_text(b.cause)}}}'
    )


class _NotPlain(Exception):
    """A value `row_line` does not write itself (the object and the encoder do)."""


def row_line(row: CallContext, *, tokens: bool) -> str | None:
    """`JSON_LINE(row_json(row, messages=False, tokens=tokens))` without the object (None: a row with a
    value of an unexpected type: write it through `row_json`)."""
    r = row.rendered
    reuse = row.reuse
    try:
        if reuse is None or row.is_compaction or row.hard_cap_failure:
            reused = '"prefix_reuse_messages": null, "prefix_reuse_chars": null, "prefix_break": null'
        else:
            reused = f'"prefix_reuse_messages": {_int(reuse.messages)}, "prefix_reuse_chars": {_int(reuse.chars)}, "prefix_break": {_break(reuse.broken)}'  # noqa: E501
        if r is None:
            built = '"chars": null, "message_count": null, "estimated_tokens": null, "hard_cap_exceeded": null, "would_compact": null'  # noqa: E501
            a = "null"
        else:
            built = (
                f'"chars": {_int(r.chars)}, "message_count": {_int(r.message_count)}, '
                f'"estimated_tokens": {_int(est_tokens(row)) if tokens else "null"}, '
                f'"hard_cap_exceeded": {_bool(r.hard_cap_exceeded)}, '
                f'"would_compact": {"false" if r.compaction is None else "true"}'
            )
            a = _int(r.layer_bytes.get("A"))
        kind = "hard_cap_failure" if row.hard_cap_failure else "compaction" if row.is_compaction else "agent"
        basis = row.prefix_basis
        if type(row.stream_id) is not str or type(row.knobs_source) is not str or type(row.note) is not str:
            return None
        if basis is not None and type(basis) is not str:
            return None
        line = (
            f'{{"stream_id": {_text(row.stream_id)}, "sequence": {_int(row.sequence)}, '
            f'"global_id": {_int(row.global_id)}, "iteration": {_int(row.iteration)}, "kind": "{kind}", '
            f'"recorded_chars": {_int(row.recorded_chars)}, '
            f'"recorded_message_count": {_int(row.recorded_message_count)}, '
            f'"recorded_input_tokens": {_int(row.recorded_input_tokens)}, '
            f'"recorded_cached_input_tokens": {_int(row.recorded_cached_tokens)}, '
            f'"recorded_cache_creation_tokens": {_int(row.recorded_cache_creation_tokens)}, '
            f"{reused}, {built}, "
            f'"prefix_inferred": {_bool(row.prefix_inferred)}, "prefix_bytes": {a}, '
            f'"prefix_basis": {"null" if basis is None else _text(basis)}, '
            f'"knobs_source": {_text(row.knobs_source)}, "simulated": {_bool(row.simulated)}, '
            f'"whatif": {_bool(row.whatif)}'
        )
    except _NotPlain:
        return None
    return f'{line}, "note": {_text(row.note)}}}' if row.note else line + "}"
