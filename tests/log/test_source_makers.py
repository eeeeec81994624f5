"""The objects planning makes for each of many partitions without their dataclass's ``__init__``
(:func:`kafkalog.log.source.slots_maker`: :class:`SegmentFiles` and :class:`PartitionFiles` from a worker's
listing, :class:`Slice` and :class:`PartitionPlan` in ``plan_all``) are the objects the constructors
make: equal, of the same type, repr and hash, as frozen, pickled alike, every field (those left out
of equality too) the same."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from kafkalog.dataset import scan
from kafkalog.log import source
from kafkalog.log.gaps import Gap, LogDirOffsets
from kafkalog.log.source import LocalStorage, PartitionFiles, SegmentFiles

SEGMENTS = [
    (0, "/d/t-0/00000000000000000000.log", 304, "/d/t-0/00000000000000000000.index", "/d/t-0/00000000000000000000.timeindex", None),
    (146, None, 0, "/d/t-0/00000000000000000146.index", None, "/d/t-0/00000000000000000146.txnindex"),
]


def _same(made: object, built: object) -> None:
    assert type(made) is type(built)
    assert made == built
    assert repr(made) == repr(built)
    assert hash(made) == hash(built)
    for f in dataclasses.fields(built):  # type: ignore[arg-type]
        assert getattr(made, f.name) is getattr(built, f.name), f.name
    first = dataclasses.fields(built)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, first, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, first)
    assert pickle.loads(pickle.dumps(made)) == built


@pytest.mark.parametrize("values", SEGMENTS)
def test_a_segment_made_from_a_workers_values_is_the_constructors(values: tuple) -> None:
    _same(source._new_segment(*values), SegmentFiles(*values))


def test_a_partition_made_from_a_workers_listing_is_the_constructors() -> None:
    args = (LocalStorage(), "orders", 3, "/d/orders-3", tuple(SegmentFiles(*v) for v in SEGMENTS), ((146, "/d/orders-3/146.snapshot"),),
            LogDirOffsets({("orders", 3): 5}), (("00000000000000000000.log", 304),), (Gap("/d/orders-3", 102, 146, "a .log is missing"),))
    made, built = source._new_partition(*args), PartitionFiles(*args)
    _same(made, built)
    assert made.log_start_offset == built.log_start_offset == 5
    assert made.gaps() == built.gaps()


def test_a_slice_and_a_plan_made_by_plan_all_are_the_constructors() -> None:
    seg = SegmentFiles(*SEGMENTS[0])
    _same(scan._new_slice(seg, 0, None), scan.Slice(seg, 0, None))
    pf = PartitionFiles(LocalStorage(), "orders", 3, "/d/orders-3", (seg,))
    for args in [(pf, 0, None, (scan.Slice(seg, 0, None),), (), None), (pf, 5, 9, (), (), 9)]:
        _same(scan._new_plan(*args), scan.PartitionPlan(*args))


def test_a_class_the_maker_cannot_make_as_its_constructor_does_is_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class Later:
        a: int
        b: list = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            raise AssertionError

    with pytest.raises(TypeError, match="no plain default"):
        source.slots_maker(Later, "a")
    with pytest.raises(TypeError):
        source.slots_maker(Checked, "a")
    with pytest.raises(TypeError):
        source.slots_maker(Later, "a", "c")
    assert source.slots_maker(Later, "a", "b")(1, [2]) == Later(1, [2])


def test_fields_named_as_the_makers_own_names_are_set_to_their_values() -> None:
    """The made function's own names cannot be a field's: fields named ``o``, ``cls``, ``new`` and
    ``make`` get the values given (a field ``o`` was set to the object itself, one named ``cls``
    refused the call)."""

    @dataclass(frozen=True, slots=True)
    class Named:
        o: int
        cls: str
        new: float = 0.5
        make: tuple = ()

    made = source.slots_maker(Named, "o", "cls", "make")(1, "c", (2,))
    assert made == Named(1, "c", make=(2,)) and (made.o, made.cls, made.new, made.make) == (1, "c", 0.5, (2,))
