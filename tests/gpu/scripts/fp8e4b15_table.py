"""What compiled Triton makes of fp8e4b15 on this GPU, as a table for the interpreter's emulation to be tested
against: every fp16 bit pattern and a dense set of fp32 values converted to e4b15 codes, and every code converted
back to fp32 and fp16.   python tests/gpu/scripts/fp8e4b15_table.py OUT.npz   (on a CUDA machine)"""

import sys

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def encode_kernel(x_ptr, q_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(q_ptr + offs, x.to(tl.float8e4b15).to(tl.uint8, bitcast=True), mask=mask)


@triton.jit
def decode_kernel(q_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    q = tl.load(q_ptr + offs, mask=mask).to(tl.float8e4b15, bitcast=True)
    tl.store(y_ptr + offs, q.to(y_ptr.dtype.element_ty), mask=mask)


def encode(x: torch.Tensor) -> np.ndarray:
    q = torch.empty(x.numel(), dtype=torch.uint8, device=x.device)
    encode_kernel[(triton.cdiv(x.numel(), 1024),)](x, q, x.numel(), BLOCK=1024)
    return q.cpu().numpy()


def decode(codes: torch.Tensor, dtype: torch.dtype) -> np.ndarray:
    y = torch.empty(codes.numel(), dtype=dtype, device=codes.device)
    decode_kernel[(1,)](codes, y, codes.numel(), BLOCK=256)
    return y.cpu().numpy()


def main(out: str) -> None:
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: under TRITON_INTERPRET=1, the interpreter's table
    f16 = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
    finite = f16[torch.isfinite(f16)].float().sort().values.unique()
    mids = (finite[1:].double() + finite[:-1].double()) / 2
    gen = torch.Generator().manual_seed(0)
    rand = (torch.rand(200_000, generator=gen, dtype=torch.float64) * 4 - 2) * 2.0 ** torch.randint(
        -20, 1, (200_000,), generator=gen).double()
    f32 = torch.cat([finite.double(), mids, rand]).float()
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    np.savez_compressed(
        out, device=np.array(torch.cuda.get_device_name() if dev == "cuda" else "interpreter"),
        triton=np.array(triton.__version__),
        f16_bits=f16.view(torch.int16).numpy(), f16_codes=encode(f16.to(dev)),
        f32=f32.numpy(), f32_codes=encode(f32.to(dev)),
        decoded_f32=decode(codes.to(dev), torch.float32), decoded_f16=decode(codes.to(dev), torch.float16))
    print("written", out)


if __name__ == "__main__":
    main(sys.argv[1])
