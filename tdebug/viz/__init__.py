"""`tdebug viz`: memory-access heatmaps of a traced launch.

- trace.py, safe_launch.py (child process): every launch traced through the interpreter's memory ops (the
  hooks the sanitizer uses; triton-viz's Tracer only for --serve), out-of-bounds lanes kept off real
  memory; reduce.py turns the records into per-element maps (model.py);
- trace_child.py: the child's entry point; trace_parent.py: the parent side (spawn, collect, serve);
- draw.py: one PNG per tensor; html.py: one self-contained HTML page; palette.py: shared colours;
- errors.py: a wrong case's error picture (|got - expected| in tolerance units, program tiles, store lines);
- target.py: what to draw when no TARGET is given.
"""
