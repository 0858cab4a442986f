"""Launch the same row kernel five times on a fresh torch.empty output each time and print, as JSON, the numpy
memory still held after the first and after the last launch (tracemalloc): what the checks keep across launches
(store records, the batches' undo, the written marks of outputs that are gone) must not grow with the launches."""

import json
import tracemalloc

import torch
import triton
import triton.language as tl


@triton.jit
def scaled_rows(x_ptr, y_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
        tl.store(y_ptr + row * n_cols + cols, x * scale, mask=mask)


rows, cols = 256, 6000
x = torch.randn(rows, cols)
tracemalloc.start()
held = []
for _ in range(5):
    y = torch.empty_like(x)
    scaled_rows[(rows,)](x, y, cols, 0.5, BLOCK=2048)
    assert torch.equal(y, x * 0.5)
    held.append(tracemalloc.get_traced_memory()[0])
print(json.dumps({"held": held, "output_bytes": y.numel() * y.element_size()}))
