"""Reading a manifest's fields: typed getters, and records of fields read by a table.

Every reader reports what is wrong to a ``Problems`` collector under the field's place in the
document (``objects[3].spec.taints[0].effect: "Sometimes" is not NoSchedule, PreferNoSchedule or
NoExecute``) and goes on with a default, so that a scenario's mistakes are all reported at once.

* the getters (``get_str``, ``get_int``, ``get_map``, ...) read one field of a mapping;
* a ``Record`` is a table of fields (``Str``, ``Int``, ``Bool``, ... of ``Field``): each has
  the manifest's key, how it is read and defaulted, whether it is required, and a rule its
  value keeps (``one_of(...)``). ``Record.read`` reads them in order and checks each as it is
  read (or all once read: ``check_after``; ``stop``: the first missing or wrong field ends the
  record); ``Record.each`` does it for every mapping of a list, with the item's place::

      _TAINT = Record(Str("key", required=True), Str("effect", rule=either(*EFFECTS)))
      for place, item, (key, effect) in _TAINT.each(spec, "taints", "objects[3].spec", probs, "a taint"):
          ...     # objects[3].spec.taints[0].key: is required

The types follow the Go fields they read (``k8s.io/api``): a ``string`` field is unset when
empty, so "" takes its default too; a pointer (``*string``, ``*int32``) is unset only when
absent, and keeps "" and 0.
"""
from __future__ import annotations

from datetime import datetime, timezone

from .quantity import _q as _quote

# pkg/apis/scheduling (v1.28): the range of an int32 field (spec.priority, a PriorityClass's value)
INT32_MIN, INT32_MAX = -2**31, 2**31 - 1


class Problems:
    """Collects ``place: message`` strings."""

    def __init__(self):
        self.items: list[str] = []

    def add(self, place: str, message: str) -> None:
        self.items.append(f"{place}: {message}" if place else message)

    def __bool__(self):
        return bool(self.items)


def _q(v) -> str:
    """Quote a user value for an error message (cut to a bounded length: see quantity._q)."""
    return _quote(v)


# ---------------------------------------------------------------------------------------------
# Small typed getters that report problems and return a default.

def _at(place: str, key: str) -> str:
    """The place of ``key`` inside ``place`` (just ``key`` at the top of the document)."""
    return f"{place}.{key}" if place else key


def get_map(d: dict, key: str, place: str, probs: Problems, default=None):
    v = d.get(key)
    if v is None:
        return {} if default is None else default
    if not isinstance(v, dict):
        probs.add(_at(place, key), f"{_q(v)} is not a mapping")
        return {} if default is None else default
    return v


def get_list(d: dict, key: str, place: str, probs: Problems):
    v = d.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        probs.add(_at(place, key), f"{_q(v)} is not a list")
        return []
    return v


def get_str(d: dict, key: str, place: str, probs: Problems, default: str | None = "") -> str | None:
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, str):
        probs.add(_at(place, key), f"{_q(v)} is not a string")
        return default
    return v


def get_int(d: dict, key: str, place: str, probs: Problems, default=None, minimum=None, maximum=None):
    return _int(d.get(key), key, place, probs, default, minimum, maximum)


def _int(v, key: str, place: str, probs: Problems, default, minimum, maximum):
    """get_int of the value ``v`` of ``key``."""
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            probs.add(_at(place, key), f"{_q(v)} is not an integer")
            return default
    if minimum is not None and v < minimum:
        probs.add(_at(place, key), f"{v} is less than {minimum}")
        return default
    if maximum is not None and v > maximum:
        probs.add(_at(place, key), f"{v} is greater than {maximum}")
        return default
    return v


def get_int32(d: dict, key: str, place: str, probs: Problems, default=None, what: str = "an int32"):
    """An integer that must fit Kubernetes' ``int32`` (the type of ``spec.priority`` and of a
    PriorityClass's ``value``)."""
    v = get_int(d, key, place, probs, default=None)
    if v is None:
        return default
    if not INT32_MIN <= v <= INT32_MAX:
        probs.add(_at(place, key), f"{v} is outside the int32 range {INT32_MIN}..{INT32_MAX} ({what})")
        return default
    return v


def get_bool(d: dict, key: str, place: str, probs: Problems, default=False):
    v = d.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        probs.add(_at(place, key), f"{_q(v)} is not true or false")
        return default
    return v


def string_map(d: dict, key: str, place: str, probs: Problems) -> dict:
    m = get_map(d, key, place, probs)
    out = {}
    for k, v in m.items():
        if not isinstance(k, str):
            probs.add(_at(place, key), f"key {_q(k)} is not a string")
            continue
        if isinstance(v, bool) or v is None or not isinstance(v, (str, int, float)):
            probs.add(f"{_at(place, key)}.{k}", f"{_q(v)} is not a string")
            continue
        out[k] = v if isinstance(v, str) else str(v)
    return out


def parse_time(v, place: str, probs: Problems):
    """An RFC 3339 instant -> aware datetime (None if absent or invalid)."""
    if v is None:
        return None
    if isinstance(v, datetime):
        return v if v.tzinfo else v.replace(tzinfo=timezone.utc)
    if not isinstance(v, str):
        probs.add(place, f"{_q(v)} is not an RFC 3339 time")
        return None
    text = v.strip()
    if text.endswith("Z") or text.endswith("z"):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        probs.add(place, f"{_q(v)} is not an RFC 3339 time")
        return None
    if t.tzinfo is None:
        probs.add(place, f"{_q(v)} has no time zone (RFC 3339 needs Z or an offset)")
        return None
    return t


def each(d: dict, key: str, place: str, probs: Problems, what: str):
    """The mappings of the list ``d[key]``, as (place, item) with the item's place
    (``place.key[i]``); an item that is not a mapping is a problem (``... is not {what}``) and
    is skipped."""
    items = get_list(d, key, place, probs)
    return _each(items, f"{place}.{key}", probs, what) if items else ()


def _each(items: list, place: str, probs: Problems, what: str):
    for i, item in enumerate(items):
        p = f"{place}[{i}]"
        if not isinstance(item, dict):
            probs.add(p, f"{_q(item)} is not {what}")
            continue
        yield p, item


# ---------------------------------------------------------------------------------------------
# Records: a table of fields, read in order.

def one_of(*allowed, says: str | None = None):
    """A rule: the value is one of ``allowed`` (an unset pointer, None, passes). The problem
    says ``"x" is not one of A, B, C``, or ``"x" is not {says}``."""
    says = says or "one of " + ", ".join(allowed)

    def rule(v):
        if v is not None and v not in allowed:
            return f"{_q(v)} is not {says}"
        return None
    return rule


def either(*allowed):
    """``one_of`` that says ``"x" is not A, B or C``."""
    return one_of(*allowed, says=", ".join(allowed[:-1]) + " or " + allowed[-1])


class Field:
    """One field of a record: the manifest's ``key``, how its value is read (``read(d, key,
    place, probs)``, which reports a value of the wrong type and returns a default), whether it
    is ``required`` (True: its value must not be empty; ``"present"``: the key must be there),
    and a ``rule`` its value keeps (a function of the value: a problem's message, or None)."""
    __slots__ = ("key", "read", "required", "rule", "checked")
    # whether the value of an unset field is the same wherever it is read (a typed field's
    # default), so that a Record may keep it (a reader's may depend on the place)
    unset_is_constant = False

    def __init__(self, key: str, read=None, *, required: bool | str = False, rule=None):
        self.key = key
        self.read = read
        self.required = required
        self.rule = rule
        self.checked = bool(required) or rule is not None

    def get(self, d: dict, place: str, probs: Problems):
        return self.read(d, self.key, place, probs)

    def check(self, d: dict, value, place: str, probs: Problems) -> bool:
        """Whether ``value`` is there if required and keeps the rule; else the problem is
        recorded under ``place.key``."""
        if self.required and (self.key not in d if self.required == "present" else not value):
            probs.add(f"{place}.{self.key}", "is required")
            return False
        if self.rule is not None:
            problem = self.rule(value)
            if problem:
                probs.add(f"{place}.{self.key}", problem)
                return False
        return True


class Str(Field):
    """A string. ``default``: the value when unset; a Go ``string`` is unset when absent or
    empty, a pointer (``*string``, ``default=None``) only when absent (it keeps "")."""
    __slots__ = ("default",)
    unset_is_constant = True

    def __init__(self, key: str, default: str | None = "", **rules):
        super().__init__(key, **rules)
        self.default = default

    def get(self, d, place, probs):
        v = d.get(self.key)
        if isinstance(v, str):
            return v if self.default is None else v or self.default
        return self.default if v is None else get_str(d, self.key, place, probs, self.default)


class Int(Field):
    """An integer in [``minimum``, ``maximum``] (either may be None); ``default`` when absent,
    of the wrong type or out of range."""
    __slots__ = ("default", "minimum", "maximum")
    unset_is_constant = True

    def __init__(self, key: str, default: int | None = None, *, minimum: int | None = None,
                 maximum: int | None = None, **rules):
        super().__init__(key, **rules)
        self.default, self.minimum, self.maximum = default, minimum, maximum

    def get(self, d, place, probs):
        return _int(d.get(self.key), self.key, place, probs, self.default, self.minimum, self.maximum)


class Int32(Field):
    """An ``int32`` (``what`` says whose, in the out-of-range problem); None when unset."""
    __slots__ = ("what",)
    unset_is_constant = True

    def __init__(self, key: str, what: str, **rules):
        super().__init__(key, **rules)
        self.what = what

    def get(self, d, place, probs):
        if d.get(self.key) is None:
            return None
        return get_int32(d, self.key, place, probs, None, self.what)


class Bool(Field):
    """true or false (false when unset)."""
    __slots__ = ()
    unset_is_constant = True

    def get(self, d, place, probs):
        if d.get(self.key) is None:
            return False
        return get_bool(d, self.key, place, probs)


class List(Field):
    """A list ([] when unset)."""
    __slots__ = ()
    unset_is_constant = True

    def get(self, d, place, probs):
        if d.get(self.key) is None:
            return []
        return get_list(d, self.key, place, probs)


class Map(Field):
    """A mapping ({} when unset)."""
    __slots__ = ()
    unset_is_constant = True

    def get(self, d, place, probs):
        if d.get(self.key) is None:
            return {}
        return get_map(d, self.key, place, probs)


class StringMap(Field):
    """A ``map[string]string`` (labels, annotations, a nodeSelector): numbers are kept as their
    text; other values and keys are problems and are left out."""
    __slots__ = ()
    unset_is_constant = True

    def get(self, d, place, probs):
        if d.get(self.key) is None:
            return {}
        return string_map(d, self.key, place, probs)


class Parsed(Field):
    """A field read by a parser of its value, ``parse(value, place, probs)`` (value None when
    absent): a label selector, a resource list, an int-or-percent."""
    __slots__ = ("parse",)

    def __init__(self, key: str, parse, **rules):
        super().__init__(key, **rules)
        self.parse = parse

    def get(self, d, place, probs):
        return self.parse(d.get(self.key), f"{place}.{self.key}", probs)


class Record:
    """The fields of a mapping, read in the table's order; each is checked as it is read (its
    type, then required, then its rule), or with ``check_after`` all are read first and then
    checked in order. With ``stop`` the first field that is missing or breaks its rule ends the
    record: it has no values, and the fields after it are not read (not checked, with
    ``check_after``)."""
    __slots__ = ("fields", "stop", "check_after", "_steps", "_keys", "_unset", "_fresh")

    def __init__(self, *fields: Field, stop: bool = False, check_after: bool = False):
        self.fields = fields
        self.stop = stop
        self.check_after = check_after
        # Records are read for every object, so: each field's get and check bound once, and,
        # of typed fields, the values of a mapping that sets none of them when these break no
        # rule (its mappings and lists made anew for each object).
        self._steps = tuple((f.get, f.check if f.checked else None) for f in fields)
        self._keys = frozenset(f.key for f in fields)
        self._unset = None
        if all(f.unset_is_constant for f in fields):
            probe = Problems()
            unset = self.read({}, "", probe)
            self._unset = None if probe or unset is None else tuple(unset)
        self._fresh = () if self._unset is None else tuple(
            (i, type(v)) for i, v in enumerate(self._unset) if isinstance(v, (dict, list)))

    def read(self, d: dict, place: str, probs: Problems) -> list | None:
        """The values of the fields (None if ``stop`` stopped the reading)."""
        if self._unset is not None and d.keys().isdisjoint(self._keys):
            values = list(self._unset)
            for i, make in self._fresh:
                values[i] = make()
            return values
        stop = self.stop
        if self.check_after:
            values = [get(d, place, probs) for get, _ in self._steps]
            for (_, check), v in zip(self._steps, values):
                if check is not None and not check(d, v, place, probs) and stop:
                    return None
            return values
        values = []
        for get, check in self._steps:
            v = get(d, place, probs)
            if check is not None and not check(d, v, place, probs) and stop:
                return None
            values.append(v)
        return values

    def each(self, d: dict, key: str, place: str, probs: Problems, what: str):
        """``read`` of every mapping of the list ``d[key]`` (see ``each``), as (place, item,
        values); an item the reading stopped at is left out."""
        items = get_list(d, key, place, probs)
        return self._each(items, f"{place}.{key}", probs, what) if items else ()

    def _each(self, items: list, place: str, probs: Problems, what: str):
        for i, item in enumerate(items):
            p = f"{place}[{i}]"
            if not isinstance(item, dict):
                probs.add(p, f"{_q(item)} is not {what}")
                continue
            values = self.read(item, p, probs)
            if values is not None:
                yield p, item, values
