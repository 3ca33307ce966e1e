"""Models made from documents whose every value already has its field's exact type, without pydantic's
validator: a model that never needs one then never has its schema built (the engine's start-up).

`exact(cls, doc)` is `cls.model_validate(doc)`, field for field (`model_fields_set` too), when every
value of `doc` is of its field's type exactly (a `str` for `str`, an `int` for `int` and within its
`Ge` bound, a `list` of them, …) and every required field is given; None otherwise, and the caller
validates with pydantic, which coerces what it coerces and words what it refuses. A union takes its
first member that fits, as pydantic's smart mode does for values of exact types; a model member that
does not fit a mapping leaves the whole document to pydantic (it may coerce where this refuses), and
a discriminated union tries only the member its discriminator names. Extra keys are dropped (models
with `extra="ignore"` only).
"""

from __future__ import annotations

import types
import typing
from typing import Any, TypeVar

from annotated_types import Ge
from pydantic import BaseModel
from pydantic.fields import FieldInfo

M = TypeVar("M", bound=BaseModel)


class _Refused(Exception):
    """The value is not of its type exactly: pydantic decides."""


_PLAIN = (str, int, bool, float)
_IMMUTABLE = (*_PLAIN, types.NoneType)


def exact(cls: type[M], doc: object) -> M | None:
    """`cls.model_validate(doc)` without the validator, or None (see the module's docstring)."""
    try:
        return _model(cls, doc)
    except _Refused:
        return None


def _model(cls: type[M], doc: object) -> M:
    if type(doc) is not dict or cls.model_config.get("extra", "ignore") != "ignore":
        raise _Refused
    values: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for name, field in cls.model_fields.items():
        if field.alias is not None or field.validation_alias is not None:
            raise _Refused
        if name not in doc:
            defaults[name] = _default(field)
            continue
        value = doc[name]
        for rule in field.metadata:
            if not isinstance(rule, Ge):
                raise _Refused
        if field.discriminator is not None:
            values[name] = _tagged(field.annotation, field.discriminator, value)
        else:
            values[name] = _value(field.annotation, value)
        for rule in field.metadata:  # `int | None` with a bound: None passes, as in pydantic
            got = values[name]
            if got is not None and (type(got) is not int or not got >= rule.ge):
                raise _Refused
    return cls.model_construct(_fields_set=set(values), **values, **defaults)


def _default(field: FieldInfo) -> Any:
    """A missing field's default, made here: pydantic's `model_construct` would first inspect the factory's
    signature (for a `list`, Python's tokenizer compiles its patterns: ~2 ms at start-up)."""
    factory = field.default_factory
    if factory is None:
        if field.is_required() or type(field.default) not in _IMMUTABLE:  # pydantic deep-copies the others
            raise _Refused
        return field.default
    if factory is list or factory is dict:
        return factory()
    if isinstance(factory, type) and issubclass(factory, BaseModel):  # made as it would be, unvalidated
        return _model(factory, {})
    raise _Refused


def _tagged(annotation: Any, key: object, value: object) -> BaseModel:
    if not isinstance(key, str) or type(value) is not dict:
        raise _Refused
    member: type[BaseModel]
    for member in typing.get_args(annotation):
        tag = member.model_fields[key].annotation
        if typing.get_origin(tag) is typing.Literal and value.get(key) in typing.get_args(tag):
            return _model(member, value)
    raise _Refused


def _value(annotation: Any, value: object) -> Any:
    if annotation is Any:
        return value
    if annotation is None or annotation is types.NoneType:
        if value is None:
            return None
        raise _Refused
    if annotation in _PLAIN:
        if type(value) is annotation:
            return value
        raise _Refused
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model(annotation, value)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        if any(type(value) is type(a) and value == a for a in args):
            return value
        raise _Refused
    if origin is list and type(value) is list:
        return [_value(args[0], v) for v in value]
    if origin is dict and type(value) is dict:
        return {_value(args[0], k): _value(args[1], v) for k, v in value.items()}
    if origin is types.UnionType or origin is typing.Union:
        for member in args:
            if isinstance(member, type) and issubclass(member, BaseModel):
                if type(value) is dict:
                    return _model(member, value)  # refused: pydantic may still coerce it into the model
                continue
            try:
                return _value(member, value)
            except _Refused:
                continue
    raise _Refused
