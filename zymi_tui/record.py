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

import sys
import types
import typing
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar, Self, TypeVar, dataclass_transform

R = TypeVar("R", bound="Record")

_MISSING: Any = object()
_PLAIN = (str, int, bool, float)
_IMMUTABLE = (*_PLAIN, types.NoneType)
_RULES = frozenset({"ge", "discriminator", "validation_alias"})  # what `field` accepts besides the default


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
    `field(discriminator="kind")`, `field(validation_alias="User")` or a path into nested input,
    `field(validation_alias=("Assistant", "content"))` (pydantic's `Field` arguments of the same names; an
    alias is what pydantic reads, and a record made from keywords takes the field's name)."""
    if not rules.keys() <= _RULES:
        raise TypeError(f"field(): unknown rules {sorted(rules.keys() - _RULES)}")
    return Spec(default, default_factory, rules)


def _annotations(cls: type) -> dict[str, Any]:
    """The annotations a class declares itself, as `inspect.get_annotations` reads them on Python 3.11,
    without importing `inspect` (which imports `ast`: a large part of a command's start-up)."""
    found: dict[str, Any] | None = cls.__dict__.get("__annotations__")  # noqa: RUF063
    if found is None and "__annotate__" in cls.__dict__:  # a Python that makes them lazily (3.14)
        import inspect

        return inspect.get_annotations(cls)
    return found or {}


class _Refused(Exception):
    """A value is not of its type exactly: pydantic decides."""


class Check:
    """`Annotated` metadata a record understands: `exact` passes a value this record may keep as it is
    (after its type was checked) or returns False (pydantic decides); `__get_pydantic_core_schema__`, for a
    subclass to define, is what pydantic validates. Any other metadata leaves every value to pydantic."""

    def exact(self, value: object) -> bool:
        return True


@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
class Record:
    """Base of the records. Fields are the class's annotations, in order (a base's first). Options, as class
    keywords (pydantic's `model_config` of the same names): `frozen=True` (no assignment; hashable),
    `extra="forbid"` (an unknown key is refused; by default it is ignored; `extra="allow"` keeps it, in
    `model_extra`), `strict=True` (pydantic validates strictly). A subclass may define `_check(self)`, run
    on every record made (pydantic's `model_validator(mode="after")`): the `ValueError` it raises becomes
    pydantic's "Value error, …". Instances compare equal when of one class with equal fields (and extra
    keys). The few pydantic methods used on them (`model_validate`, `model_validate_json`,
    `model_dump`, `model_copy`, `model_fields_set`, `model_extra`) behave as pydantic's do."""

    __slots__ = ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
    __hash__ = None  # type: ignore[assignment]  # mutable, as a pydantic model that is not frozen

    _FIELDS: ClassVar[dict[str, Spec]] = {}
    _HINTS: ClassVar[dict[str, Any] | None] = None
    _PLAN: ClassVar[list[_Field] | None] = None
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
        if cls._EXTRA not in ("ignore", "forbid", "allow"):
            raise TypeError(f"{cls.__name__}: extra={cls._EXTRA!r} (ignore, forbid or allow)")
        if cls._FROZEN:
            cls.__hash__ = Record._frozen_hash  # type: ignore[method-assign,assignment]
            cls.__setattr__ = Record._frozen_setattr  # type: ignore[method-assign,assignment]
        fields = dict(cls._FIELDS)
        for name, annotation in _annotations(cls).items():
            if str(annotation).startswith("ClassVar"):
                continue
            value = cls.__dict__.get(name, _MISSING)
            fields[name] = value if isinstance(value, Spec) else Spec(value, None, {})
            if value is not _MISSING:
                delattr(cls, name)  # the default lives in the instance, as a pydantic model keeps it
        cls._FIELDS = fields
        cls._HINTS = None
        cls._PLAN = None
        cls._ADAPTER = None

    def __init__(self, **data: Any) -> None:
        cls = type(self)
        try:
            values, given = _fields(cls, data)
            _fill(self, values, given, None if cls._EXTRA != "allow" else _extra(cls, data))
            _check(self)
        except _Refused:
            made = _validated(cls, data)
            _fill(self, made.__dict__, made.model_fields_set, made.model_extra)

    def _check(self) -> None:
        """Checks across fields, for a subclass to define (raise ValueError)."""

    def _frozen_hash(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def _frozen_setattr(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__dict__ == other.__dict__ and self.model_extra == other.model_extra

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"

    def __getstate__(self) -> tuple[dict[str, Any], set[str], dict[str, Any] | None]:
        return self.__dict__, self.model_fields_set, self.model_extra

    def __setstate__(self, state: tuple[dict[str, Any], set[str], dict[str, Any] | None]) -> None:
        _fill(self, dict(state[0]), set(state[1]), state[2])

    @property
    def model_extra(self) -> dict[str, Any] | None:
        """The keys it was given that are not fields, with `extra="allow"` (else None)."""
        try:
            extra: dict[str, Any] | None = _GET_EXTRA(self)  # a slot pydantic-core fills
        except AttributeError:  # made by `builder` with no extra keys
            extra = {} if type(self)._EXTRA == "allow" else None
        return extra

    @property
    def model_fields_set(self) -> set[str]:
        """The fields given when it was made (the others took their defaults)."""
        try:
            given: set[str] = _GET_FIELDS_SET(self)  # a slot pydantic-core fills
        except AttributeError:  # made by `builder`: every field was given
            given = set(self.__dict__)
        return given

    @classmethod
    def model_validate(cls, doc: object) -> Self:
        """Made from a mapping of its fields (by `__init__`'s rules); raises `Invalid`."""
        made = exact(cls, doc)
        return made if made is not None else _validated(cls, doc)

    @classmethod
    def model_validate_json(cls, data: str | bytes) -> Self:
        """Made from JSON text by pydantic, in one pass (aliases read); raises pydantic's `ValidationError`."""
        made: Self = _adapter(cls).validate_json(data)
        return made

    def model_dump(self) -> dict[str, Any]:
        """The fields as a dict (then any extra keys), records in them as dicts too (pydantic's python mode)."""
        return {k: _dumped(v) for k, v in (self.__dict__ | (self.model_extra or {})).items()}

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Self:
        """A shallow copy with `update` applied, not validated (as pydantic's)."""
        copied = type(self).__new__(type(self))
        extra = self.model_extra
        _fill(
            copied,
            {**self.__dict__, **(update or {})},
            self.model_fields_set | set(update or ()),
            None if extra is None else dict(extra),
        )
        return copied

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """The schema pydantic builds for a model with these fields, making instances of this class."""
        from pydantic import Field  # only when pydantic validates: it is loaded already
        from pydantic_core import core_schema as cs

        fields = {}
        for name, spec in cls._FIELDS.items():
            annotation = _hints(cls)[name]
            rules = {k: v for k, v in spec.rules.items() if k != "validation_alias"}  # the alias is the field's
            if rules:
                annotation = typing.Annotated[annotation, Field(**rules)]
            schema = handler.generate_schema(annotation)
            if spec.factory is not None:
                schema = cs.with_default_schema(schema, default_factory=spec.factory)
            elif spec.default is not _MISSING:
                schema = cs.with_default_schema(schema, default=spec.default)
            fields[name] = cs.model_field(schema, validation_alias=_alias(spec.rules.get("validation_alias")))
        config = cs.CoreConfig(
            title=cls.__name__,
            extra_fields_behavior=cls._EXTRA,  # type: ignore[typeddict-item]
            strict=cls._STRICT,
            validate_by_name=True,  # a record made from keywords takes its fields' names, aliased or not
        )
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
    _fill(made, values, given, _extra(cls, doc))
    _check(made)
    return made


def _check(record: Record) -> None:
    if type(record)._check is Record._check:
        return  # no checks across fields
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


_SET_DICT = object.__setattr__
_SET_FIELDS_SET = Record.__dict__["__pydantic_fields_set__"].__set__  # the slots' own setters: no lookup
_SET_EXTRA = Record.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = Record.__dict__["__pydantic_private__"].__set__
_GET_EXTRA = partial(Record.__dict__["__pydantic_extra__"].__get__)
_GET_FIELDS_SET = partial(Record.__dict__["__pydantic_fields_set__"].__get__)


def _fill(record: Record, values: dict[str, Any], given: set[str], extra: dict[str, Any] | None) -> None:
    _SET_DICT(record, "__dict__", values)
    _SET_FIELDS_SET(record, given)
    _SET_EXTRA(record, extra)
    _SET_PRIVATE(record, None)


def _extra(cls: type[Record], doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The keys of `doc` that are not fields, kept as given by a class with `extra="allow"` (else None)."""
    if cls._EXTRA != "allow":
        return None
    return {k: v for k, v in doc.items() if k not in cls._FIELDS}


def _alias(alias: str | tuple[str, ...] | None) -> str | list[str | int] | None:
    """A validation alias as pydantic-core takes it: a key, or a path into nested input."""
    return list(alias) if isinstance(alias, tuple) else alias


def _adapter(cls: type[Record]) -> Any:
    from pydantic import ConfigDict, TypeAdapter  # a value pydantic must read, coerce or refuse

    if cls._ADAPTER is None:  # titled as pydantic titles a model's errors (not by its checks' wrapper)
        cls._ADAPTER = TypeAdapter(cls, config=ConfigDict(title=cls.__name__))
    return cls._ADAPTER


def _validated(cls: type[R], doc: object) -> R:
    from pydantic import ValidationError

    try:
        made: R = _adapter(cls).validate_python(doc)
    except ValidationError as e:
        raise Invalid(e) from None
    return made


def _hints(cls: type[Record]) -> dict[str, Any]:
    """The fields' annotations, evaluated in their modules (`typing.get_type_hints` would evaluate every
    class's in the MRO, the base's own included: 3x the time at start-up)."""
    if cls._HINTS is None:
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__[: cls.__mro__.index(Record)]):
            scope = vars(sys.modules[klass.__module__])
            for name, annotation in _annotations(klass).items():
                if name in cls._FIELDS:
                    hints[name] = _evaluated(annotation, scope)
        cls._HINTS = hints
    return cls._HINTS


def _evaluated(annotation: Any, scope: dict[str, Any]) -> Any:
    if not isinstance(annotation, str):
        return annotation
    value = eval(annotation, scope)  # an annotation of the record's own module, as typing evaluates it
    return types.NoneType if value is None else value


Checker = typing.Callable[[Any], Any]  # a value of an annotation's type exactly, or raises `_Refused`


class _Field(typing.NamedTuple):
    """What `_fields` checks of a field: a plain type (`str`, `int`, ...) inline (most fields; a record
    made in a loop spends its time there), any other annotation by its compiled `check`."""

    name: str
    spec: Spec
    annotation: Any
    plain: type | None
    check: Checker
    bound: Any
    discriminator: Any
    default: Any  # an immutable default, taken as it is (else `_default` decides)


def _plan(cls: type[Record]) -> list[_Field]:
    if cls._PLAN is None:
        hints = _hints(cls)
        cls._PLAN = [
            _Field(
                name,
                spec,
                hints[name],
                hints[name] if hints[name] in _PLAIN else None,
                _checker(hints[name]),
                spec.rules.get("ge"),
                spec.rules.get("discriminator"),
                spec.default if spec.factory is None and type(spec.default) in _IMMUTABLE else _MISSING,
            )
            for name, spec in cls._FIELDS.items()
        ]
    return cls._PLAN


def _fields(cls: type[Record], doc: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Every field's value from `doc` (exact types) or its default, and the fields `doc` gave."""
    if cls._EXTRA == "forbid" and not doc.keys() <= cls._FIELDS.keys():
        raise _Refused
    values: dict[str, Any] = {}
    given: set[str] = set()
    for name, spec, annotation, plain, check, bound, discriminator, default in cls._PLAN or _plan(cls):
        if name not in doc:
            values[name] = _default(spec) if default is _MISSING else default
            continue
        value = doc[name]
        if plain is not None:
            if type(value) is not plain:
                raise _Refused
        elif discriminator is not None:
            value = _tagged(annotation, discriminator, value)
        else:
            value = check(value)
        if bound is not None and value is not None and (type(value) is not int or not value >= bound):
            raise _Refused  # `int | None` with a bound: None passes, as in pydantic
        values[name] = value
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


_CHECKERS: dict[Any, Checker] = {}


def _checker(annotation: Any) -> Checker:
    """The check of one annotation, made once (a record made in a loop checks the same few annotations):
    it returns a value of type `annotation` exactly (a mapping for a record made into the record), or
    raises `_Refused`."""
    try:
        return _CHECKERS[annotation]
    except KeyError:
        check = _CHECKERS[annotation] = _make_checker(annotation)
        return check
    except TypeError:  # an annotation that cannot be a key
        return _make_checker(annotation)


def _refuse(value: object) -> Any:
    raise _Refused


def _make_checker(annotation: Any) -> Checker:  # one case per kind of annotation
    if annotation is Any:
        return lambda value: value
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        checks = annotation.__metadata__
        if not all(isinstance(c, Check) for c in checks):
            return _refuse
        inner = _checker(annotation.__origin__)

        def annotated(value: object) -> Any:
            value = inner(value)
            if not all(c.exact(value) for c in checks):
                raise _Refused
            return value

        return annotated
    if annotation is None or annotation is types.NoneType:
        return lambda value: None if value is None else _refuse(value)
    if annotation in _PLAIN:
        return lambda value: value if type(value) is annotation else _refuse(value)
    if isinstance(annotation, type) and issubclass(annotation, Record):
        record: type[Record] = annotation

        def made(value: object) -> Any:
            if type(value) is record:  # an instance passes as it is (pydantic does not revalidate it)
                return value
            if type(value) is not dict:
                raise _Refused
            return _made(record, value)

        return made
    if origin is typing.Literal:
        return lambda value: value if any(type(value) is type(a) and value == a for a in args) else _refuse(value)
    if origin is list:
        item = _checker(args[0])
        return lambda value: [item(v) for v in value] if type(value) is list else _refuse(value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _checker(args[0])
        return lambda value: tuple(item(v) for v in value) if type(value) is tuple else _refuse(value)
    if origin is tuple:
        items = [_checker(a) for a in args]
        return lambda value: (
            tuple(c(v) for c, v in zip(items, value, strict=True))
            if type(value) is tuple and len(value) == len(items)
            else _refuse(value)
        )
    if origin is dict:
        key, item = _checker(args[0]), _checker(args[1])
        return lambda value: {key(k): item(v) for k, v in value.items()} if type(value) is dict else _refuse(value)
    if origin is types.UnionType or origin is typing.Union:
        return _union_checker(args)
    return _refuse


def _union_checker(members: tuple[Any, ...]) -> Checker:
    """The first member that takes the value; a mapping for a record member is that record's or refused
    (pydantic may still coerce it into the record)."""
    records = {m for m in members if isinstance(m, type) and issubclass(m, Record)}
    checks = [(m, m in records, _checker(m)) for m in members]

    def union(value: object) -> Any:
        for member, is_record, check in checks:
            if is_record:
                if type(value) is dict:
                    return check(value)
                if type(value) is member:
                    return value
                continue
            try:
                return check(value)
            except _Refused:
                continue
        raise _Refused

    return union


MISSING: Any = _MISSING  # a field's default when it has none


def record_fields(cls: type[Record]) -> list[tuple[str, Any, Any, Any]]:
    """Each field of `cls` in order: its name, evaluated annotation, default (`MISSING` if none), factory."""
    hints = _hints(cls)
    return [(name, hints[name], spec.default, spec.factory) for name, spec in cls._FIELDS.items()]


def built(cls: type[R], values: dict[str, Any], extra: dict[str, Any] | None) -> R:
    """`cls` from values already checked against its fields (by a msgspec struct derived from them), in
    field order; not checked again."""
    made: R = builder(cls)(values, extra)
    return made


def builder(cls: type[R]) -> Callable[[dict[str, Any], dict[str, Any] | None], R]:
    """What `built` does for `cls`, bound once (a fast reader makes one record per row): only the
    fields are set, and the extra keys when there are some (`model_extra` and `model_fields_set`
    read an unset slot as none and all)."""
    new, allow, set_dict, set_extra = object.__new__, cls._EXTRA == "allow", _SET_DICT, _SET_EXTRA

    def make(values: dict[str, Any], extra: dict[str, Any] | None) -> R:
        made: R = new(cls)
        set_dict(made, "__dict__", values)
        if extra and allow:
            set_extra(made, extra)
        return made

    return make
