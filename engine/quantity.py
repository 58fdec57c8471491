"""Kubernetes resource quantities and durations, parsed exactly.

Quantities follow ``k8s.io/apimachinery/pkg/api/resource.Quantity``: an optional sign, a
decimal number, then a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m "" k M G T
P E) or a decimal exponent (e3, E-2).  Values are ``Decimal`` so nothing is lost; the
scheduler then uses ``milli_value`` (CPU) and ``value`` (everything else), both rounding up
as upstream's ``MilliValue()`` / ``Value()`` do.

Durations are a number of seconds or a Go-style string (``500ms``, ``1m30s``, ``2h``).
Virtual time is kept as integer microseconds (``US`` per second).
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, ROUND_CEILING

US = 1_000_000  # virtual-time units (microseconds) per second

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
            "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[A-Za-z]*)$")


def _q(v) -> str:
    """Quote a user value for an error message as the scenario loader does (``"12x"``)."""
    if isinstance(v, str):
        return '"' + v + '"'
    return repr(v)


def parse_quantity(value) -> Decimal:
    """Parse a quantity (``"100m"``, ``"1Gi"``, ``"1e3"``, ``2``, ``1.5``) to a Decimal.

    Raises ValueError with the text ``is not a quantity`` for anything else.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{_q(value)} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{_q(value)} is not a quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise ValueError(f"{_q(value)} is not a quantity")
    m = _QUANTITY_RE.match(value.strip())
    if not m:
        raise ValueError(f"{_q(value)} is not a quantity")
    number, suffix = m.groups()
    try:
        base = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
        raise ValueError(f"{_q(value)} is not a quantity") from None
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    if suffix in _DECIMAL:
        return base * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return base.scaleb(int(suffix[1:]))
    raise ValueError(f"{_q(value)} is not a quantity")


def ceil_int(d: Decimal) -> int:
    return int(d.to_integral_value(rounding=ROUND_CEILING))


def milli_value(q: Decimal) -> int:
    """Quantity.MilliValue(): the value in thousandths, rounded up."""
    return ceil_int(q * 1000)


def value(q: Decimal) -> int:
    """Quantity.Value(): the integer value, rounded up."""
    return ceil_int(q)


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ms|us|µs|ns|h|m|s)")
_UNIT_US = {"h": 3600 * US, "m": 60 * US, "s": US, "ms": 1000, "us": 1, "µs": 1, "ns": Decimal("0.001")}


def parse_duration(value) -> int:
    """Parse a duration (seconds as a number, or ``"1m30s"``) to integer microseconds.

    Raises ValueError (``is not a duration``) for anything else, including negative values
    and durations finer than a microsecond.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{_q(value)} is not a duration")
    if isinstance(value, (int, float)):
        d = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError(f"{_q(value)} is not a duration")
        try:
            d = Decimal(text)
        except InvalidOperation:
            pos, total = 0, Decimal(0)
            for m in _DURATION_PART.finditer(text):
                if m.start() != pos:
                    break
                total += Decimal(m.group(1)) * _UNIT_US[m.group(2)]
                pos = m.end()
            if pos != len(text) or pos == 0:
                raise ValueError(f"{_q(value)} is not a duration") from None
            if total != total.to_integral_value():
                raise ValueError(f"{_q(value)} is finer than a microsecond") from None
            return int(total)
    else:
        raise ValueError(f"{_q(value)} is not a duration")
    if not d.is_finite() or d < 0:
        raise ValueError(f"{_q(value)} is not a duration")
    us = d * US
    if us != us.to_integral_value():
        raise ValueError(f"{_q(value)} is finer than a microsecond")
    return int(us)


def seconds(us: int) -> float:
    """Virtual time (microseconds) as seconds, for JSON."""
    return us / US
