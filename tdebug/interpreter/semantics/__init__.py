"""Fidelity to compiled Triton: the interpreter's answers made the GPU's (scalars, grids, libdevice, bf16, fma, tf32,
casts of names, block pointers, boolean ops, loop counters, ...)."""
