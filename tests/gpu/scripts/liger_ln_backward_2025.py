"""Liger 2025-style layer norm backward: one program per SM, rows_per_program rows each, a row loop bounded by
min(...): with more SMs than rows, most programs' loops are empty."""
import math
import os

import torch
import triton
import triton.language as tl


@triton.jit
def ln_bwd(X_ptr, stride_x, W_ptr, Mean_ptr, RSTD_ptr, DX_ptr, stride_dx, DW_ptr, stride_dw, DB_ptr, stride_db,
           DY_ptr, stride_dy, n_rows, n_cols, rows_per_program: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row_block_id = tl.program_id(0).to(tl.int64)
    row_start = row_block_id * rows_per_program
    row_end = min((row_block_id + 1) * rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    dW_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    db_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    w = tl.load(W_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for row_idx in range(row_start, row_end):
        x = tl.load(X_ptr + row_idx * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(DY_ptr + row_idx * stride_dy + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.load(Mean_ptr + row_idx)
        rstd = tl.load(RSTD_ptr + row_idx)
        x_hat = (x - mean) * rstd
        wdy = w * dy
        c1 = tl.sum(x_hat * wdy, axis=0) / n_cols
        c2 = tl.sum(wdy, axis=0) / n_cols
        tl.store(DX_ptr + row_idx * stride_dx + cols, (wdy - (x_hat * c1 + c2)) * rstd, mask=mask)
        dW_row += dy * x_hat
        db_row += dy
    tl.store(DW_ptr + row_block_id * stride_dw + cols, dW_row, mask=mask)
    tl.store(DB_ptr + row_block_id * stride_db + cols, db_row, mask=mask)


dev = "cuda" if torch.cuda.is_available() else "cpu"
sm = int(os.environ.get("SMS", "132"))
torch.manual_seed(0)
n_rows, n_cols = 21, 100
x = torch.randn(n_rows, n_cols, device=dev)
w = torch.randn(n_cols, device=dev)
dy = torch.randn(n_rows, n_cols, device=dev)
mean = x.mean(-1)
rstd = torch.rsqrt(x.var(-1, unbiased=False) + 1e-6)
dx = torch.empty_like(x)
dw = torch.empty(sm, n_cols, device=dev)
db = torch.empty(sm, n_cols, device=dev)
rpp = math.ceil(n_rows / sm)
ln_bwd[(sm,)](x, x.stride(0), w, mean, rstd, dx, dx.stride(0), dw, dw.stride(0), db, db.stride(0), dy, dy.stride(0),
              n_rows, n_cols, rows_per_program=rpp, BLOCK_SIZE=128)
x_hat = (x - mean[:, None]) * rstd[:, None]
torch.testing.assert_close(dw.sum(0), (dy * x_hat).sum(0), rtol=1e-4, atol=1e-4)
torch.testing.assert_close(db.sum(0), dy.sum(0), rtol=1e-4, atol=1e-4)
print("ok")
