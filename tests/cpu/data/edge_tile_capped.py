"""edge_tile_bias.py's kernel with the store records capped below its 6,400 stored lanes: tdebug.explain must
say it kept no record of who stored what, never name programs from a part of them."""

import torch
from edge_tile_bias import bias_add

import tdebug
from tdebug.interpreter.hooks.stores import RECORDER

RECORDER.max_lanes = 1000
gen = torch.Generator().manual_seed(0)
x = torch.randn(64, 100, generator=gen)
b = torch.randn(100, generator=gen)
y = bias_add(x, b)
found = tdebug.explain(y, x + b)
print("localised:", found is not None)
