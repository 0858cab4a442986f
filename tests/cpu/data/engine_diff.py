"""The batched engine against the serial one, in one process: every quick case of the given catalogue files run
under both, outputs compared bit for bit (in-place inputs too), findings (check, file:line, tensor, count,
programs, examples) and store records (program, line, elements) compared as they are.

    python engine_diff.py FILE... [--max-cases N]      prints one JSON line: {"cases": n, "differences": [...]}
    python engine_diff.py --scenarios FILE [NAME...]     the same for FILE's scenario_* functions (a fresh seed)
    python engine_diff.py --liger [OP...]                 the same for Liger-Kernel's ops (liger_ops.py), fwd + bwd
    python engine_diff.py --liger --twice [OP...]         each op called twice (fresh inputs of the same shapes: the
                                                          batched engine's second launches replay the first's)
"""

from __future__ import annotations

import json
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
from engine_compare import _bits, _records, _same, run_scenario  # noqa: E402

from tdebug.catalogue.cases import plan_cases  # noqa: E402
from tdebug.catalogue.poison import poisoned_empty  # noqa: E402
from tdebug.catalogue.spec import load_target  # noqa: E402
from tdebug.interpreter import patches
from tdebug.interpreter.batched import batch_memory, grid_loop
from tdebug.interpreter.hooks import stores  # noqa: E402
from tdebug.runtime.worker import judged_spec  # noqa: E402
from tdebug.sanitize.session import SanitizerSession  # noqa: E402


def run(spec, case, session, executor: str):
    os.environ["TDEBUG_EXECUTOR"] = executor
    patches.STATE.config_index = case.config
    patches.STATE.launches.clear()
    stores.RECORDER.clear()
    inputs = spec.make_inputs(case)
    session.begin_case()
    error = ""
    out = None
    try:
        with poisoned_empty():
            out = spec.launch(*inputs)
    except Exception as e:  # noqa: BLE001 - a kernel's exception is part of what both engines must agree on
        error = f"{type(e).__name__}: {e}"
    findings = sorted(json.dumps(f.to_dict(), sort_keys=True, default=str) for f in session.end_case())
    return {"out": _bits(out), "inputs": _bits(list(inputs)), "findings": findings, "error": error,
            "records": _records()}


def scenarios(path, names: list[str], session) -> int:
    from pathlib import Path

    from tdebug.catalogue.spec import import_file

    module = import_file(Path(path)) if isinstance(path, str) else path
    seed = int.from_bytes(os.urandom(4), "little")
    report = {"seed": seed, "scenarios": {}, "differences": []}
    for name in sorted(n for n in vars(module) if n.startswith("scenario_")):
        if names and name not in names:
            continue
        a = run_scenario(getattr(module, name), seed, session, "serial")
        splits, predicated = grid_loop.STATS.splits, grid_loop.STATS.predicated_loops
        compacted, ifs = grid_loop.STATS.compacted_iterations, grid_loop.STATS.predicated_ifs
        chunks, refused = grid_loop.STATS.lane_chunks, grid_loop.STATS.lanes_refused
        folds = grid_loop.STATS.lane_folds
        rows = batch_memory.COUNTS.rows
        recordings = grid_loop.STATS.recordings
        b = run_scenario(getattr(module, name), seed, session, "batched")
        report["scenarios"][name] = {"batched_launches": b["batched"], "error": b["error"],
                                     "findings": [json.loads(f)["check"] for f in b["findings"]],
                                     "splits": grid_loop.STATS.splits - splits,
                                     "predicated_loops": grid_loop.STATS.predicated_loops - predicated,
                                     "predicated_ifs": grid_loop.STATS.predicated_ifs - ifs,
                                     "compacted_iterations": grid_loop.STATS.compacted_iterations - compacted,
                                     "rows_accesses": batch_memory.COUNTS.rows - rows,
                                     "lane_chunks": grid_loop.STATS.lane_chunks - chunks,
                                     "lanes_refused": grid_loop.STATS.lanes_refused - refused,
                                     "lane_folds": grid_loop.STATS.lane_folds - folds,
                                     "recordings": grid_loop.STATS.recordings - recordings,
                                     "replays": b["replays"], "replay_aborts": b["replay_aborts"]}
        for key in ("out", "findings", "error", "records"):
            if not _same(a[key], b[key]):
                report["differences"].append({"scenario": name, "what": key, "serial": str(a[key])[:400],
                                              "batched": str(b[key])[:400]})
    print(json.dumps(report))
    return 0


def _liger_scenario(op, calls: int = 1):
    """One Liger op, forward and backward, `calls` times on fresh inputs from `seed` (the same shapes): what it
    computed, gradients included."""
    import liger_ops

    def scenario(seed: int):
        torch.manual_seed(seed)
        computed = []
        for _ in range(calls):
            inputs = op.make(op.small)
            grads = [x.is_floating_point() and i not in op.constants for i, x in enumerate(inputs)]
            ours = [x.detach().clone().requires_grad_(g) if g else x.clone() for x, g in zip(inputs, grads)]
            out = liger_ops.outputs(op.liger(*ours))
            torch.autograd.backward(out, [torch.randn(o.shape) for o in out])
            computed += [o.detach() for o in out] + [x.grad for x, g in zip(ours, grads) if g]
        return computed

    return scenario


def liger(names: list[str], session) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import liger_ops

    calls = 2 if "--twice" in names else 1
    names = [n for n in names if n != "--twice"]
    module = type(sys)("liger_scenarios")
    for op in liger_ops.liger_ops():
        if not names or op.name in names:
            setattr(module, f"scenario_{op.name}", _liger_scenario(op, calls))
    return scenarios(module, [], session)


def main(argv: list[str]) -> int:
    max_cases = 0
    if "--max-cases" in argv:
        i = argv.index("--max-cases")
        max_cases = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    patches.install()
    stores.install()
    session = SanitizerSession()
    session.install()
    if argv and argv[0] == "--scenarios":
        return scenarios(argv[1], argv[2:], session)
    if argv and argv[0] == "--liger":
        return liger(argv[1:], session)
    differences, count = [], 0
    for path in argv:
        target = load_target(path)
        spec = judged_spec(target, None)
        cases = plan_cases(spec, quick=True, seed=1)
        for case in cases[:max_cases] if max_cases else cases:
            count += 1
            a = run(spec, case, session, "serial")
            b = run(spec, case, session, "batched")
            for key in ("out", "inputs", "findings", "error", "records"):
                if not _same(a[key], b[key]):
                    differences.append({"file": path, "case": case.label(), "what": key,
                                        "serial": str(a[key])[:300], "batched": str(b[key])[:300]})
    print(json.dumps({"cases": count, "differences": differences, "batched_launches": grid_loop.STATS.launches_batched,
                      "fallbacks": sorted(set(grid_loop.STATS.fallbacks))}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
