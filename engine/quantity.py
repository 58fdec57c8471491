"""Kubernetes resource quantities and durations, parsed exactly.

Quantities follow ``k8s.io/apimachinery/pkg/api/resource.Quantity``: an optional sign, a
decimal number, then a binary suffix (Ki Mi Gi Ti Pi Ei), a decimal suffix (n u m "" k M G T
P E) or a decimal exponent (e3, E-2).  Values are ``Decimal`` so nothing is lost; the
scheduler then uses ``milli_value`` (CPU) and ``value`` (everything else), both rounding up
as upstream's ``MilliValue()`` / ``Value()`` do.

Durations are a number of seconds or a Go-style string (``500ms``, ``1m30s``, ``2h``).
Virtual time is kept as integer microseconds (``US`` per second).

Bounds (so that hostile input is refused quickly, before any large number is built):

- A quantity's exponent must parse as an int64, as upstream's ``suffixHandler.interpret``
  requires (``strconv.ParseInt``; otherwise ``ErrSuffix``), and its magnitude may not pass
  2^63-1 (``MAX_QUANTITY``): upstream's ``Quantity`` documents that no quantity may represent
  a larger number and lets ``Value()``/``MilliValue()`` overflow int64 for a decimal one; we
  refuse it instead.
  A CPU quantity's millicores must fit an int64 too (the scheduler counts CPU with
  ``MilliValue()``), see ``objects.resource_list``. A binary-suffixed quantity beyond 2^63-1
  (``16Ei``) is capped there, as upstream caps it. A non-zero quantity smaller than 1n is
  rounded up to 1n as upstream's ``ParseQuantity`` does (``amount.Round(Nano, RoundUp)``).
- A duration may not pass ``MAX_DURATION_SECONDS`` (our own bound: Go's ``time.Duration``
  stops at about 292 years, but every virtual second costs the engine some work through the
  periodic queue flushes, so we stop much earlier).
"""
from __future__ import annotations

import re
import reprlib
from decimal import Decimal, InvalidOperation, ROUND_CEILING

US = 1_000_000  # virtual-time units (microseconds) per second
MAX_QUANTITY = 2**63 - 1          # resource.maxAllowed: no quantity is larger in magnitude
MAX_DURATION_SECONDS = 10**6      # our bound on any duration: about 11.6 days of virtual time
_NANO = Decimal("1e-9")
_INT64_DIGITS = 19                # an int64 has at most 19 decimal digits
_MAX_QUOTED = 120                 # characters of a user value quoted in an error message

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
            "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12),
            "P": Decimal(10**15), "E": Decimal(10**18)}
_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[A-Za-z]*)$")


def _q(v) -> str:
    """Quote a user value for an error message as the scenario loader does (``"12x"``),
    cut to a bounded length (an error message never echoes a huge value back)."""
    return shorten('"' + v + '"' if isinstance(v, str) else _safe_repr(v))


_REPR = reprlib.Repr()      # bounded work and length, even for a huge or deep container
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxtuple = 3, 6, 6, 6
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = 80, 40, 80


def _safe_repr(v) -> str:
    """repr() of a user value, bounded (``reprlib``: a long list shows its first items)."""
    return _REPR.repr(v)


def shorten(text: str, limit: int = _MAX_QUOTED) -> str:
    """``text`` cut to about ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def parse_quantity(value) -> Decimal:
    """Parse a quantity (``"100m"``, ``"1Gi"``, ``"1e3"``, ``2``, ``1.5``) to a Decimal.

    Raises ValueError with the text ``is not a quantity`` for anything else.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{_q(value)} is not a quantity")
    if isinstance(value, int):
        if abs(value) > MAX_QUANTITY:
            raise _too_large(value)
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{_q(value)} is not a quantity")
        q = Decimal(repr(value))
        _check_magnitude(q, value)
        return q
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
        q = base * _BINARY[suffix]
        if abs(q) > MAX_QUANTITY:       # ParseQuantity caps a binary-suffixed one at maxAllowed
            q = Decimal(MAX_QUANTITY).copy_sign(q)
    elif suffix in _DECIMAL:
        q = base * _DECIMAL[suffix]
    elif suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent_text = suffix[1:].lstrip("+-").lstrip("0")
        # strconv.ParseInt(suffix[1:], 10, 64): an exponent beyond int64 is ErrSuffix
        if len(exponent_text) > _INT64_DIGITS or abs(int(suffix[1:])) > MAX_QUANTITY:
            raise ValueError(f"{_q(value)} is not a quantity (its exponent does not fit an int64)")
        exponent = int(suffix[1:])
        if not base:
            q = base                    # zero, whatever the exponent
        elif base.adjusted() + exponent > _INT64_DIGITS:
            raise _too_large(value)
        elif base.adjusted() + exponent < -30:
            q = _NANO.copy_sign(base)   # far below 1n: ParseQuantity rounds it up to 1n
        else:
            q = base.scaleb(exponent)
    else:
        raise ValueError(f"{_q(value)} is not a quantity")
    _check_magnitude(q, value)
    return q


def _too_large(value) -> ValueError:
    return ValueError(f"{_q(value)} is more than Kubernetes' largest quantity (2^63-1 = {MAX_QUANTITY})")


def _check_magnitude(q: Decimal, value) -> None:
    if abs(q) > MAX_QUANTITY:
        raise _too_large(value)


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
    and durations finer than a microsecond, and for durations longer than
    ``MAX_DURATION_SECONDS`` (checked before any large number is built).
    """
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{_q(value)} is not a duration")
    if isinstance(value, (int, float)):
        if isinstance(value, int) and value > MAX_DURATION_SECONDS:
            raise _too_long(value)
        try:
            d = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        except (ValueError, InvalidOperation):
            raise ValueError(f"{_q(value)} is not a duration") from None
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
                part = Decimal(m.group(1))
                if part.adjusted() > _INT64_DIGITS:
                    raise _too_long(value) from None
                total += part * _UNIT_US[m.group(2)]
                if total > MAX_DURATION_SECONDS * US:
                    raise _too_long(value) from None
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
    if d and d.adjusted() > _INT64_DIGITS or d > MAX_DURATION_SECONDS:
        raise _too_long(value)
    if d and d.adjusted() < -_INT64_DIGITS:
        raise ValueError(f"{_q(value)} is finer than a microsecond")
    us = d * US
    if us != us.to_integral_value():
        raise ValueError(f"{_q(value)} is finer than a microsecond")
    return int(us)


def _too_long(value) -> ValueError:
    return ValueError(f"{_q(value)} is longer than the longest duration the engine accepts "
                      f"({MAX_DURATION_SECONDS}s, about {MAX_DURATION_SECONDS / 86400:.1f} days of virtual time)")


def seconds(us: int) -> float:
    """Virtual time (microseconds) as seconds, for JSON."""
    return us / US
