"""Filter pushdown: which of Spark's filters the source applies itself, and how.

Accepted: ``EqualTo``, ``GreaterThan``, ``GreaterThanOrEqual``, ``LessThan``, ``LessThanOrEqual``
and ``In`` on ``topic``, ``partition``, ``offset`` and ``timestamp``. Each is applied exactly: topic
and partition filters drop whole partitions at planning (every row of a partition has the same
topic and partition), offset filters narrow each partition's offset range, and timestamp filters
are evaluated on every row (their lower bound also prunes segments through the time index).
Everything else (``Not``, ``IsNull``, string matches, other columns) is returned to Spark.

Timestamps are compared as Spark compares them, in microseconds: Kafka's millisecond timestamp
``t`` is ``t * 1000`` µs, so bounds are rounded to the millisecond values they admit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

__all__ = ["Bounds", "RowFilter", "push_filters"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_US = dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class Bounds:
    """An integer predicate: ``lo <= v <= hi`` (None: unbounded) and, if set, ``v in values``."""

    lo: int | None = None
    hi: int | None = None
    values: frozenset[int] | None = None

    @property
    def unbounded(self) -> bool:
        return self.lo is None and self.hi is None and self.values is None

    @property
    def empty(self) -> bool:
        if self.lo is not None and self.hi is not None and self.lo > self.hi:
            return True
        return self.values is not None and not any(self.admits(v) for v in self.values)

    def admits(self, v: int) -> bool:
        """True when ``v`` passes the bounds (and is one of ``values`` when set)."""
        if self.lo is not None and v < self.lo:
            return False
        if self.hi is not None and v > self.hi:
            return False
        return self.values is None or v in self.values

    def and_(self, lo: int | None = None, hi: int | None = None, values: Iterable[int] | None = None) -> Bounds:
        """These bounds intersected with more."""
        new_lo = self.lo if lo is None else lo if self.lo is None else max(lo, self.lo)
        new_hi = self.hi if hi is None else hi if self.hi is None else min(hi, self.hi)
        new_values = self.values
        if values is not None:
            vs = frozenset(values)
            new_values = vs if new_values is None else new_values & vs
        return Bounds(new_lo, new_hi, new_values)

    def range(self) -> tuple[int | None, int | None]:
        """The smallest ``[lo, hi]`` (inclusive, None: unbounded) holding every admitted value."""
        lo, hi = self.lo, self.hi
        if self.values is not None:
            admitted = [v for v in self.values if self.admits(v)]
            if admitted:
                lo, hi = min(admitted), max(admitted)
        return lo, hi

    def mask(self, arr: np.ndarray) -> np.ndarray | None:
        """A boolean mask of ``arr`` (None: every element passes)."""
        m: np.ndarray | None = None
        if self.lo is not None:
            m = arr >= self.lo
        if self.hi is not None:
            m2 = arr <= self.hi
            m = m2 if m is None else m & m2
        if self.values is not None:
            m3 = np.isin(arr, np.fromiter(self.values, dtype=np.int64, count=len(self.values)))
            m = m3 if m is None else m & m3
        return m


@dataclass(frozen=True)
class RowFilter:
    """The pushed filters, folded per column (topic: string predicates evaluated at planning)."""

    topic: tuple[tuple[str, object], ...] = ()
    partition: Bounds = Bounds()
    offset: Bounds = Bounds()
    timestamp_ms: Bounds = Bounds()

    def admits_topic(self, topic: str) -> bool:
        """True when every pushed topic filter holds for ``topic``."""
        for op, v in self.topic:
            if op == "in":
                if topic not in v:  # type: ignore[operator]
                    return False
            elif not _compare(op, topic, v):
                return False
        return True

    def admits_partition(self, topic: str, partition: int) -> bool:
        """True when the partition can hold matching rows."""
        return self.admits_topic(topic) and self.partition.admits(partition) and not self.offset.empty and not self.timestamp_ms.empty


def _compare(op: str, a: object, b: object) -> bool:
    if op == "=":
        return a == b
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    if op == "<":
        return a < b  # type: ignore[operator]
    return a <= b  # type: ignore[operator]


_OPS: dict[type, str] = {EqualTo: "=", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<", LessThanOrEqual: "<=", In: "in"}


def _int_bounds(op: str, value: object) -> dict | None:
    """Bounds kwargs for an integer column, or None if the value is not an integer."""
    vals = value if op == "in" else (value,)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):  # type: ignore[union-attr]
        return None
    if op == "in":
        return {"values": tuple(vals)}  # type: ignore[arg-type]
    v: int = value  # type: ignore[assignment]
    if op == "=":
        return {"values": (v,)}
    if op == ">":
        return {"lo": v + 1}
    if op == ">=":
        return {"lo": v}
    if op == "<":
        return {"hi": v - 1}
    return {"hi": v}


def _micros(value: object) -> int | None:
    if not isinstance(value, dt.datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _US


def _timestamp_bounds(op: str, value: object) -> dict | None:
    """Bounds on millisecond timestamps equivalent to ``ts_ms * 1000 <op> value`` (µs)."""
    if op == "in":
        micros = [_micros(v) for v in value]  # type: ignore[union-attr]
        if any(m is None for m in micros):
            return None
        return {"values": tuple(m // 1000 for m in micros if m % 1000 == 0)}  # type: ignore[operator]
    us = _micros(value)
    if us is None:
        return None
    floor, exact = us // 1000, us % 1000 == 0
    ceil = floor if exact else floor + 1
    if op == "=":
        return {"values": (floor,) if exact else ()}
    if op == ">":
        return {"lo": floor + 1}
    if op == ">=":
        return {"lo": ceil}
    if op == "<":
        return {"hi": ceil - 1}
    return {"hi": floor}


def push_filters(filters: Sequence[Filter]) -> tuple[RowFilter, list[Filter]]:
    """Split Spark's filters into the :class:`RowFilter` the source applies and those it returns."""
    topic: list[tuple[str, object]] = []
    part, off, ts = Bounds(), Bounds(), Bounds()
    rejected: list[Filter] = []
    for f in filters:
        op = _OPS.get(type(f))
        attr = getattr(f, "attribute", ())
        column = attr[0].lower() if len(attr) == 1 else None
        value = getattr(f, "value", None)
        if op == "in":
            value = tuple(value) if isinstance(value, list | tuple) else None
        kw: dict | None = None
        if op is None or column is None or value is None:
            pass
        elif column == "topic":
            if (isinstance(value, str) and op != "in") or (op == "in" and all(isinstance(v, str) for v in value)):
                topic.append((op, frozenset(value) if op == "in" else value))
                continue
        elif column in ("partition", "offset"):
            kw = _int_bounds(op, value)
        elif column == "timestamp":
            kw = _timestamp_bounds(op, value)
        if kw is None:
            rejected.append(f)
        elif column == "partition":
            part = part.and_(**kw)
        elif column == "offset":
            off = off.and_(**kw)
        else:
            ts = ts.and_(**kw)
    return RowFilter(tuple(topic), part, off, ts), rejected
