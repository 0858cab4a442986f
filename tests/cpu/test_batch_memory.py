"""tdebug.interpreter.batched.batch_memory: the undo of a batch (whatever the writes: dense row blocks kept as a
slice of their span, scattered elements as a gather, overlapping, repeated, restoring puts every element back), and its
address arithmetic (bit for bit Triton's create_addptr on every offset dtype, element width and shape), and the
layouts it remembers (a pointer per program plus offsets every program shares: exactly the addresses made, and
only for such tiles)."""

import os

import numpy as np
import pytest

from tdebug.interpreter.batched.batch_memory import MemoryUndo, _addptr, forget_span, program_layout, saved


def _writes(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Index arrays as accesses make them: row blocks (dense), strided columns and random picks (sparse), with
    repeats, each possibly overlapping the others."""
    out = []
    for _ in range(12):
        kind = rng.integers(3)
        if kind == 0:  # a block of rows, maybe with a masked tail
            start, size = int(rng.integers(0, n - 64)), int(rng.integers(1, 64))
            out.append(np.arange(start, start + size, dtype=np.int64))
        elif kind == 1:  # a column of a row-major tile: wide gaps
            out.append(np.arange(int(rng.integers(0, 8)), n, 37, dtype=np.int64))
        else:  # scattered, unordered, repeated
            out.append(rng.integers(0, n, size=int(rng.integers(1, 50))).astype(np.int64))
    return out


def test_restore_puts_back_every_element_of_dense_and_sparse_writes():
    rng = np.random.default_rng()
    kinds = set()
    for _ in range(200):
        n = int(rng.integers(128, 2000))
        memory = rng.standard_normal(n).astype(np.float32)
        table = rng.integers(-1, 100, size=n).astype(np.int32)
        memory0, table0 = memory.copy(), table.copy()
        undo = MemoryUndo(storages=[])
        table_undo = []
        for elements in _writes(rng, n):
            forget_span()  # a new access
            undo.save(memory, elements)
            table_undo.append(saved(table, elements))  # the same elements, measured once
            kinds.add(type(undo.entries[-1][1]).__name__)
            memory[elements] = rng.standard_normal(elements.size).astype(np.float32)
            table[elements] = rng.integers(0, 100, size=elements.size)
        undo.restore()
        for array, index, old in reversed(table_undo):
            array[index] = old
        assert np.array_equal(memory, memory0)
        assert np.array_equal(table, table0)
        assert undo.entries == []
    assert kinds == {"slice", "ndarray"}  # both ways of keeping old values were exercised


def test_a_dense_block_is_kept_as_its_span():
    table = np.arange(100, dtype=np.int32)
    forget_span()
    array, index, old = saved(table, np.arange(10, 30, dtype=np.int64))
    assert array is table and index == slice(10, 30) and np.array_equal(old, np.arange(10, 30))
    assert not np.shares_memory(old, table)  # a copy, not a view
    forget_span()
    array, index, old = saved(table, np.array([3, 90], dtype=np.int64))  # span 88 for 2 elements: a gather
    assert isinstance(index, np.ndarray) and old.tolist() == [3, 90]


def test_addresses_are_triton_s_bit_for_bit():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    builder = InterpreterBuilder()
    triton_s = builder.create_addptr  # Triton's own (a fresh builder: no patch of tdebug's on it)
    ours = _addptr(triton_s)
    rng = np.random.default_rng()
    offset_types = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.bool_]
    element_types = [tl.int1, tl.int8, tl.float16, tl.bfloat16, tl.float32, tl.int64, tl.float64]
    shapes = [((), ()), ((), (7,)), ((7,), (7,)), ((4, 1), (4, 16)), ((4, 16), (4, 16)), ((4, 16), (16,)),
              ((1, 16), (4, 1))]
    for _ in range(400):
        ptr_shape, off_shape = shapes[rng.integers(len(shapes))]
        off_type = offset_types[rng.integers(len(offset_types))]
        info = np.iinfo(off_type) if off_type is not np.bool_ else None
        if info is None:
            offsets = rng.integers(0, 2, size=off_shape).astype(np.bool_)
        else:  # across the whole range: negative offsets wrap in uint64 as in Triton
            offsets = rng.integers(info.min, info.max, size=off_shape, dtype=off_type, endpoint=True)
        if rng.integers(3) == 0 and offsets.ndim == 2:
            offsets = offsets.T.copy().T  # a non-contiguous offset array
        base = rng.integers(0, 2**63, size=ptr_shape, dtype=np.uint64)
        kind = element_types[rng.integers(len(element_types))]
        ptr = TensorHandle(np.array(base), tl.pointer_type(kind))
        off = TensorHandle(np.array(offsets), tl.int64)
        want, got = triton_s(ptr, off), ours(ptr, off)
        assert got.data.dtype == want.data.dtype == np.uint64
        assert got.data.shape == want.data.shape
        assert np.array_equal(got.data, want.data), (ptr_shape, off_shape, off_type, kind)
        assert got.dtype is want.dtype
        assert np.array_equal(off.data, offsets) and np.array_equal(ptr.data, base)  # operands left as they were


def test_a_remembered_layout_is_the_addresses_made_and_only_such_tiles_are_remembered():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    pytest.importorskip("triton")
    import gc

    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    from tdebug.interpreter.batched.program_axis import MARK

    ours = _addptr(InterpreterBuilder().create_addptr)
    rng = np.random.default_rng()
    remembered, kept = 0, None
    for _ in range(300):
        programs, lanes = int(rng.integers(2, 9)), tuple(int(n) for n in rng.integers(2, 6, size=rng.integers(1, 3)))
        per_program = rng.integers(0, 2**40, size=programs, dtype=np.uint64)
        shared = rng.integers(-1000, 1000, size=lanes, dtype=np.int64)
        way = int(rng.integers(4))
        if way == 0:  # the pointer per program, as a splat makes it (a broadcast view): offsets shared
            ptr_data = np.broadcast_to(per_program.reshape((programs,) + (1,) * len(lanes)), (programs,) + lanes)
            ptr, off = TensorHandle(ptr_data, tl.pointer_type(tl.float32)), TensorHandle(shared, tl.int64)
            setattr(ptr, MARK, True)
        elif way == 1:  # a pointer block every program shares, an offset per program
            ptr = TensorHandle(shared.astype(np.uint64) + np.uint64(2**41), tl.pointer_type(tl.float32))
            off = TensorHandle(per_program.astype(np.int64).reshape((programs,) + (1,) * len(lanes)), tl.int64)
            setattr(off, MARK, True)
        elif way == 2:  # a batched pointer tile that differs lane by lane: no layout
            ptr_data = rng.integers(0, 2**40, size=(programs,) + lanes, dtype=np.uint64)
            ptr, off = TensorHandle(ptr_data, tl.pointer_type(tl.float32)), TensorHandle(shared, tl.int64)
            setattr(ptr, MARK, True)
        else:  # neither operand batched: no layout
            ptr = TensorHandle(per_program.reshape((programs,) + (1,) * len(lanes)), tl.pointer_type(tl.float32))
            off = TensorHandle(shared, tl.int64)
        out = ours(ptr, off).data
        layout = program_layout(out)
        if way >= 2:
            assert layout is None
            continue
        assert layout is not None
        remembered, kept = remembered + 1, out
        first, offsets = layout
        assert np.array_equal(first[:, None] + offsets[None, :], out.reshape(programs, -1))
        assert program_layout(out.copy()) is None  # another array with the same values: not known so
    assert remembered
    from tdebug.interpreter.batched import batch_memory

    last = id(kept)
    assert last in batch_memory._LAYOUTS
    del out, kept
    gc.collect()
    assert last not in batch_memory._LAYOUTS  # an entry goes with its array
