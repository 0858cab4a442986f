"""Exercise probes, run by the worker as a script (python path, never imported by tdebug itself).

    probe.py story TARGET BUG_FILE SHAPE DTYPE LAYOUT SEED
        Launch TARGET's kernel once on the inputs of BUG_FILE's story_inputs(case): inputs a correct
        kernel must refuse (e.g. a token id past the vocabulary). An exception or a device_assert is the
        worker's to report; a launch that completes prints its outcome.
    probe.py user_check TARGET FIXED_FILE SHAPES DTYPE LAYOUT SEED
        Judge TARGET's user_check(out, ref): it must accept the kernel's output on every shape of SHAPES
        (129x127x65,64x64x2048) and reject wrong outputs made from it.

Each prints one line `TDEBUG_PROBE <json>` and exits 0 when the probe ran (its verdict is in the JSON).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

MARK = "TDEBUG_PROBE "


def _emit(data: dict) -> None:
    print(MARK + json.dumps(data), flush=True)


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("x"))


def _device() -> str:
    """The interpreter works on CPU tensors; compiled kernels (GPU modes) on CUDA ones."""
    return "cpu" if os.environ.get("TRITON_INTERPRET") == "1" else "cuda"


def story(target: str, bug_file: str, shape: str, dtype: str, layout: str, seed: str) -> None:
    from tdebug.catalogue.poison import poisoned_empty
    from tdebug.catalogue.spec import Case, import_file, load_target

    copy = load_target(target)
    # The story's inputs come from the pristine bug file (under its own module name: it shares the copy's stem).
    source = import_file(Path(bug_file), module_name="tdebug_exercise_story")
    case = Case(_shape(shape), dtype, layout, int(seed), _device())
    inputs = source.story_inputs(case)
    with poisoned_empty():
        copy.spec.launch(*inputs)
    _emit({"probe": "story", "outcome": "completed"})


def _wrong_outputs(out, ref) -> list[tuple[str, object]]:
    """Outputs any sound acceptance test rejects, made from a correct one."""
    worst = int(ref.abs().argmax())
    zeroed = out.clone()
    zeroed.view(-1)[worst] = 0
    nan = out.clone()
    nan.view(-1)[out.numel() // 2] = float("nan")
    scaled = (out.double() * 1.03).to(out.dtype)
    shifted = out.clone()
    flat = shifted.view(-1)
    flat[worst] = (flat[worst].double() + 0.05 * ref.abs().max().double()).to(out.dtype)
    return [("the largest output set to 0 (an element never computed)", zeroed),
            ("one element NaN", nan),
            ("every element 3% too large", scaled),
            ("the largest output off by 5% of the output's range", shifted)]


def user_check(target: str, fixed_file: str, shapes: str, dtype: str, layout: str, seed: str) -> None:
    import torch

    from tdebug.catalogue.poison import poisoned_empty
    from tdebug.catalogue.spec import Case, load_target

    copy = load_target(target)
    judge = load_target(fixed_file).spec
    check = getattr(copy.module, "user_check", None)
    if check is None:
        _emit({"probe": "user_check", "ok": False, "problems": ["the file has no user_check(out, ref) function"]})
        return
    problems: list[str] = []
    for index, text in enumerate(shapes.split(",")):
        case = Case(_shape(text), dtype, layout, int(seed) + index, _device())
        inputs = judge.make_inputs(case)
        with poisoned_empty():
            out = copy.spec.launch(*inputs)
        ref = judge.reference(*[x.float() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                                for x in inputs])
        err = float((out.double() - ref.double()).abs().max())
        if not check(out, ref):
            problems.append(f"{text}: rejects the correct kernel's output (max abs error {err:.3g}, "
                            f"largest |output| {float(ref.abs().max()):.4g})")
        for what, wrong in _wrong_outputs(out, ref):
            if check(wrong, ref):
                problems.append(f"{text}: accepts a wrong output ({what})")
    _emit({"probe": "user_check", "ok": not problems, "problems": problems})


def main(argv: list[str]) -> int:
    if len(argv) != 7 or argv[0] not in ("story", "user_check"):
        print(__doc__, file=sys.stderr)
        return 2
    {"story": story, "user_check": user_check}[argv[0]](*argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
