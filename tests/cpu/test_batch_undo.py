"""tdebug.interpreter.batch_memory's undo of a batch: whatever the writes (dense row blocks kept as a slice of
their span, scattered elements as a gather, overlapping, repeated), restoring puts every element back."""

import numpy as np

from tdebug.interpreter.batch_memory import MemoryUndo, forget_span, saved


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
