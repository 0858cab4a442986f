"""Pointer tables on a GPU (tdebug.interpreter.semantics.device_tables), with CPU tensors standing in for device ones:
device addresses in an int64 table map to the launch's host copies and back, a stale entry is left alone."""

from __future__ import annotations

import numpy as np
import torch

from tdebug.interpreter.semantics import device_tables


def host_copy(t: torch.Tensor) -> torch.Tensor:
    """What the interpreter's _init_args_hst makes: a fresh storage, viewed as the argument is."""
    storage = t.untyped_storage().clone()
    return torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.size(), t.stride())


def test_table_entries_map_to_host_copies_and_back():
    torch.manual_seed(0)
    a = torch.randn(7, 5)  # reached only through the table
    b = torch.randn(3, 4)[:, 1:]  # a view: its offset inside the storage is kept
    arg = torch.randn(11)  # also an argument: its own host copy is reused
    stale = 0x7F00_0000_0000  # inside no live tensor
    table = torch.tensor([a.data_ptr(), b.data_ptr(), arg.data_ptr() + 8, stale, 17], dtype=torch.int64)
    table_h, arg_h = host_copy(table), host_copy(arg)
    tables = device_tables.rewrite([(table, table_h), (arg, arg_h)], live=[a, b, arg, table])
    assert tables is not None
    got = table_h.numpy().view(np.uint64)
    copied = {c.device.data_ptr(): c for c in tables.copied}
    assert set(copied) == {a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()}
    host_a = copied[a.untyped_storage().data_ptr()].host
    host_b = copied[b.untyped_storage().data_ptr()].host
    assert int(got[0]) == host_a.data_ptr()
    assert int(got[1]) == host_b.data_ptr() + b.storage_offset() * 4
    assert int(got[2]) == arg_h.data_ptr() + 8
    assert int(got[3]) == stale and int(got[4]) == 17  # left as they were: the sanitizer judges them
    # the host copy holds the same values, found through the rewritten address; named after its device tensor
    view = next(t for t in copied[a.untyped_storage().data_ptr()].tensors)
    assert torch.equal(view, a) and view.data_ptr() != a.data_ptr()
    assert device_tables.home_of(host_a.data_ptr()) is a
    view.mul_(2)  # the kernel stores through the table
    device_tables.restore_tables(tables)
    assert torch.equal(table_h, table)  # device addresses back before Triton copies the table home
    assert torch.equal(a, view)  # what the kernel stored reached the "device" tensor
    assert device_tables.home_of(host_a.data_ptr()) is None


def test_no_addresses_no_work():
    idx = torch.arange(100, dtype=torch.int64)
    called = []
    assert device_tables.rewrite([(idx, host_copy(idx))], live=lambda: called.append(1) or []) is None
    assert not called  # small integers are indices: the live tensors are not even listed
    x = torch.randn(4)
    assert device_tables.map_tables([x], [x]) is None  # same device: nothing to map


def test_strided_table_and_overwritten_entry():
    a = torch.randn(16)
    base = torch.zeros(2, 6, dtype=torch.int64)
    table = base[:, ::3]  # strided
    table[1, 1] = a.data_ptr() + 12
    table_h = host_copy(table)
    tables = device_tables.rewrite([(table, table_h)], live=[a])
    assert tables is not None
    host = tables.copied[0].host.data_ptr()
    assert int(table_h[1, 1]) == host + 12 and int(table_h[0, 0]) == 0
    table_h[1, 1] = 5  # the kernel overwrote the entry: left as it wrote it
    device_tables.restore_tables(tables)
    assert int(table_h[1, 1]) == 5
