"""Launch a bug file's story_inputs (the batch its story is about) through its SPEC's launcher on the GPU.

    python tests/gpu/scripts/run_story.py bugs/11_embedding_out_of_range_id.py

The catalogue's make_inputs are the valid inputs every check uses; some bugs only show on the story's
inputs (an out-of-range token id), which the matrix runs this way under each GPU tool.
"""

import sys

import torch

from tdebug.catalogue.spec import Case, load_target

target = load_target(sys.argv[1])
bug, spec = target.bug, target.spec
shape = spec.normalize_shape(tuple(bug.shape)) if bug.shape else tuple(spec.default_shape)
case = Case(shape, bug.dtype, bug.layout, 0, "cuda")
out = spec.launch(*target.module.story_inputs(case))
torch.cuda.synchronize()
print(f"{spec.name}: launched on the story's inputs, output {tuple(out.shape)}")
