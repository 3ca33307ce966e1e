"""Records: classes declared as pydantic models are (annotated fields, defaults, `field(...)` rules), made
without importing pydantic when their values already have their fields' exact types.

A record is made from keywords (`LlmConfig(provider="x")`) or a mapping (`LlmConfig.model_validate(doc)`). When
every value is of its field's type exactly (a `str` for `str`, an `int` for `int` and within its `ge`
bound, a `list` of them, a mapping or an instance for a record field, …) and every required field is
given, the record is made here, field by field, and pydantic is never imported. Otherwise pydantic
validates it, from a schema it builds for the class (`__get_pydantic_core_schema__`, the same schema
pydantic would build for a `BaseModel` with these fields), so it coerces what it coerces and words what
it refuses exactly as it would: its error becomes `Invalid`, with pydantic's text and `errors()`.
A union takes its first member that fits, as pydantic's smart mode does for values of exact types; a
mapping that does not fit a record member leaves the whole value to pydantic (it may coerce where this
refuses), and a discriminated union tries only the member its discriminator names.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

R = TypeVar("R", bound="Record")

_MISSING: Any = object()
_PLAIN = (str, int, bool, float)
_IMMUTABLE = (*_PLAIN, types.NoneType)
_RULES = frozenset({"ge", "discriminator"})  # what `field` accepts besides the default


class Invalid(ValueError):
    """What pydantic refused, with its words: `str()` and `errors()` are its `ValidationError`'s."""

    def __init__(self, error: Any) -> None:
        super().__init__(str(error))
        self.error = error

    def errors(self, **options: Any) -> list[Any]:
        result: list[Any] = self.error.errors(**options)
        return result


class Spec:
    """A field's default (a value or a factory) and its rules (`ge`, `discriminator`)."""

    __slots__ = ("default", "factory", "rules")

    def __init__(self, default: Any, factory: Any, rules: dict[str, Any]) -> None:
        self.default, self.factory, self.rules = default, factory, rules

    @property
    def required(self) -> bool:
        return self.default is _MISSING and self.factory is None


def field(*, default: Any = _MISSING, default_factory: Any = None, **rules: Any) -> Any:
    """A field with a default factory and/or rules: `field(default=30, ge=0)`, `field(default_factory=list)`,
    `field(discriminator="kind")` (pydantic's `Field` arguments of the same names)."""
    if not rules.keys() <= _RULES:
        raise TypeError(f"field(): unknown rules {sorted(rules.keys() - _RULES)}")
    return Spec(default, default_factory, rules)


class _Refused(Exception):
    """A value is not of its type exactly: pydantic decides."""


@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
class Record:
    """Base of the records. Fields are the class's annotations, in order (a base's first). Options, as class
    keywords (pydantic's `model_config` of the same names): `frozen=True` (no assignment; hashable),
    `extra="forbid"` (an unknown key is refused; by default it is ignored), `strict=True` (pydantic
    validates strictly). A subclass may define `_check(self)`, run on every record made (pydantic's
    `model_validator(mode="after")`): the `ValueError` it raises becomes pydantic's "Value error, …".
    Instances compare equal when of one class with equal fields. The few pydantic methods used on them
    (`model_validate`, `model_dump`, `model_copy`, `model_fields_set`) behave as pydantic's do."""

    __slots__ = ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
    __hash__ = None  # type: ignore[assignment]  # mutable, as a pydantic model that is not frozen

    _FIELDS: ClassVar[dict[str, Spec]] = {}
    _HINTS: ClassVar[dict[str, Any] | None] = None
    _ADAPTER: ClassVar[Any] = None
    _FROZEN: ClassVar[bool] = False
    _EXTRA: ClassVar[str] = "ignore"
    _STRICT: ClassVar[bool] = False

    def __init_subclass__(
        cls, *, frozen: bool | None = None, extra: str | None = None, strict: bool | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls._FROZEN = cls._FROZEN if frozen is None else frozen
        cls._EXTRA = cls._EXTRA if extra is None else extra
        cls._STRICT = cls._STRICT if strict is None else strict
        if cls._EXTRA not in ("ignore", "forbid"):
            raise TypeError(f"{cls.__name__}: extra={cls._EXTRA!r} (ignore or forbid)")
        if cls._FROZEN:
            cls.__hash__ = Record._frozen_hash  # type: ignore[method-assign,assignment]
            cls.__setattr__ = Record._frozen_setattr  # type: ignore[method-assign,assignment]
        fields = dict(cls._FIELDS)
        for name, annotation in inspect.get_annotations(cls).items():
            if str(annotation).startswith("ClassVar"):
                continue
            value = cls.__dict__.get(name, _MISSING)
            fields[name] = value if isinstance(value, Spec) else Spec(value, None, {})
            if value is not _MISSING:
                delattr(cls, name)  # the default lives in the instance, as a pydantic model keeps it
        cls._FIELDS = fields
        cls._HINTS = None
        cls._ADAPTER = None

    def __init__(self, **data: Any) -> None:
        cls = type(self)
        try:
            values, given = _fields(cls, data)
            _fill(self, values, given)
            _check(self)
        except _Refused:
            made = _validated(cls, data)
            _fill(self, made.__dict__, made.model_fields_set)

    def _check(self) -> None:
        """Checks across fields, for a subclass to define (raise ValueError)."""

    def _frozen_hash(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def _frozen_setattr(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    def __getstate__(self) -> tuple[dict[str, Any], set[str]]:
        return self.__dict__, self.model_fields_set

    def __setstate__(self, state: tuple[dict[str, Any], set[str]]) -> None:
        _fill(self, dict(state[0]), set(state[1]))

    @property
    def model_fields_set(self) -> set[str]:
        """The fields given when it was made (the others took their defaults)."""
        given: set[str] = getattr(self, "__pydantic_fields_set__")  # noqa: B009  # a slot pydantic-core fills
        return given

    @classmethod
    def model_validate(cls, doc: object) -> Self:
        """Made from a mapping of its fields (by `__init__`'s rules); raises `Invalid`."""
        made = exact(cls, doc)
        return made if made is not None else _validated(cls, doc)

    def model_dump(self) -> dict[str, Any]:
        """The fields as a dict, records in them as dicts too (pydantic's python mode)."""
        return {k: _dumped(v) for k, v in self.__dict__.items()}

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A shallow copy with `update` applied, not validated (as pydantic's)."""
        copied = type(self).__new__(type(self))
        _fill(copied, {**self.__dict__, **(update or {})}, self.model_fields_set | set(update or ()))
        return copied

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """The schema pydantic builds for a model with these fields, making instances of this class."""
        from pydantic import Field  # only when pydantic validates: it is loaded already
        from pydantic_core import core_schema as cs

        fields = {}
        for name, spec in cls._FIELDS.items():
            annotation = _hints(cls)[name]
            if spec.rules:
                annotation = typing.Annotated[annotation, Field(**spec.rules)]
            schema = handler.generate_schema(annotation)
            if spec.factory is not None:
                schema = cs.with_default_schema(schema, default_factory=spec.factory)
            elif spec.default is not _MISSING:
                schema = cs.with_default_schema(schema, default=spec.default)
            fields[name] = cs.model_field(schema)
        config = cs.CoreConfig(title=cls.__name__, extra_fields_behavior=cls._EXTRA, strict=cls._STRICT)  # type: ignore[typeddict-item]
        inner = cs.model_fields_schema(fields, model_name=cls.__name__, extra_behavior=cls._EXTRA)  # type: ignore[arg-type]
        schema = cs.model_schema(cls, inner, config=config, extra_behavior=cls._EXTRA, frozen=cls._FROZEN)  # type: ignore[arg-type]
        if cls._check is Record._check:
            return schema
        return cs.no_info_after_validator_function(_checked, schema)


def exact(cls: type[R], doc: object) -> R | None:
    """`cls` made from a mapping whose values have their fields' exact types, or None (pydantic decides)."""
    if type(doc) is not dict:
        return None
    try:
        return _made(cls, doc)
    except _Refused:
        return None


def _made(cls: type[R], doc: Mapping[str, Any]) -> R:
    values, given = _fields(cls, doc)
    made = cls.__new__(cls)
    _fill(made, values, given)
    _check(made)
    return made


def _check(record: Record) -> None:
    try:
        record._check()
    except ValueError:
        raise _Refused from None  # pydantic words it


def _checked(record: R) -> R:
    record._check()
    return record


def _dumped(value: Any) -> Any:
    if isinstance(value, Record):
        return value.model_dump()
    if isinstance(value, list | tuple):
        return type(value)(_dumped(v) for v in value)
    if isinstance(value, dict):
        return {k: _dumped(v) for k, v in value.items()}
    return value


def _fill(record: Record, values: dict[str, Any], given: set[str]) -> None:
    object.__setattr__(record, "__dict__", values)
    object.__setattr__(record, "__pydantic_fields_set__", given)
    object.__setattr__(record, "__pydantic_extra__", None)
    object.__setattr__(record, "__pydantic_private__", None)


def _validated(cls: type[R], doc: object) -> R:
    from pydantic import ConfigDict, TypeAdapter, ValidationError  # a value pydantic must coerce or refuse

    if cls._ADAPTER is None:  # titled as pydantic titles a model's errors (not by its checks' wrapper)
        cls._ADAPTER = TypeAdapter(cls, config=ConfigDict(title=cls.__name__))
    try:
        made: R = cls._ADAPTER.validate_python(doc)
    except ValidationError as e:
        raise Invalid(e) from None
    return made


def _hints(cls: type[Record]) -> dict[str, Any]:
    if cls._HINTS is None:
        cls._HINTS = typing.get_type_hints(cls)
    return cls._HINTS


def _fields(cls: type[Record], doc: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Every field's value from `doc` (exact types) or its default, and the fields `doc` gave."""
    hints = _hints(cls)
    if cls._EXTRA == "forbid" and not doc.keys() <= cls._FIELDS.keys():
        raise _Refused
    values: dict[str, Any] = {}
    given: set[str] = set()
    for name, spec in cls._FIELDS.items():
        if name not in doc:
            values[name] = _default(spec)
            continue
        value = doc[name]
        if "discriminator" in spec.rules:
            values[name] = _tagged(hints[name], spec.rules["discriminator"], value)
        else:
            values[name] = _value(hints[name], value)
        bound = spec.rules.get("ge")
        got = values[name]
        if bound is not None and got is not None and (type(got) is not int or not got >= bound):
            raise _Refused  # `int | None` with a bound: None passes, as in pydantic
        given.add(name)
    return values, given


def _default(spec: Spec) -> Any:
    if spec.factory is None:
        if spec.required or type(spec.default) not in _IMMUTABLE:  # pydantic deep-copies the others
            raise _Refused
        return spec.default
    if spec.factory is list or spec.factory is dict:
        return spec.factory()
    if isinstance(spec.factory, type) and issubclass(spec.factory, Record):  # made as it would be
        return _made(spec.factory, {})
    raise _Refused


def _tagged(annotation: Any, key: object, value: object) -> Record:
    if not isinstance(key, str) or type(value) is not dict:
        raise _Refused
    for member in typing.get_args(annotation):
        tag = _hints(member)[key]
        if typing.get_origin(tag) is typing.Literal and value.get(key) in typing.get_args(tag):
            return typing.cast(Record, _made(member, value))
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
    if isinstance(annotation, type) and issubclass(annotation, Record):
        if type(value) is annotation:  # an instance passes as it is (pydantic does not revalidate it)
            return value
        if type(value) is not dict:
            raise _Refused
        return _made(annotation, value)
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
            if isinstance(member, type) and issubclass(member, Record):
                if type(value) is dict:
                    return _value(member, value)  # refused: pydantic may still coerce it into the record
                if type(value) is member:
                    return value
                continue
            try:
                return _value(member, value)
            except _Refused:
                continue
    raise _Refused
