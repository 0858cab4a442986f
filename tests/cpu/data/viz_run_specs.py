"""Test driver for tdebug viz: launch several catalogue files in one traced process.

Usage (as a script target): tdebug viz tests/cpu/data/viz_run_specs.py -- NAME=FILE[:SHAPE[:VARIANT[:LAYOUT]]] ...
Each catalogue file is launched as `tdebug viz FILE` would (the bug's shape, the smallest-tile config);
NAME=@SCRIPT runs a plain script instead. A line `SCENARIO NAME FIRST LAST` on stdout gives the
numbers of the launches each made.
"""

import runpy
import sys

from tdebug.catalogue.shapes import parse_shape
from tdebug.catalogue.spec import Case, load_target
from tdebug.interpreter.patches import STATE
from tdebug.viz import trace
from tdebug.viz.trace_child import case_shape, default_config


def launch(name: str, spec_text: str) -> None:
    path, *rest = spec_text.split(":")
    shape = parse_shape(rest[0]) if rest and rest[0] else None
    variant = rest[1] if len(rest) > 1 and rest[1] else ""
    layout = rest[2] if len(rest) > 2 and rest[2] else "contiguous"
    target = load_target(path)
    spec = target.spec
    from tdebug.catalogue.cases import autotune_configs

    configs = autotune_configs(spec.kernel)
    config = default_config(configs) if configs else None
    STATE.config_index = config
    case = Case(case_shape(target, list(shape) if shape else None), "fp32", layout, 0, "cpu", config,
                variant or list(spec.variants)[0])
    first = trace.SESSION.count + 1
    spec.launch(*spec.make_inputs(case))
    print(f"SCENARIO {name} {first} {trace.SESSION.count}", flush=True)


def run_script(name: str, path: str) -> None:
    first = trace.SESSION.count + 1
    runpy.run_path(path, run_name="__main__")
    print(f"SCENARIO {name} {first} {trace.SESSION.count}", flush=True)


for arg in sys.argv[1:]:
    name, _, spec_text = arg.partition("=")
    if spec_text.startswith("@"):
        run_script(name, spec_text[1:])
    else:
        launch(name, spec_text)
