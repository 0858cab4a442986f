"""`--engine symbolic`: triton-viz's own (z3) sanitizer, reported in tdebug's Finding format for comparison.

It reasons about addresses symbolically, so it answers fast whatever the size, but it does not compute
outputs (the reference comparison is skipped under it) and only knows out-of-bounds accesses; it
misses uninitialised reads, races and unwritten outputs, and FACTS.md lists kernels it crashes on.
"""

from __future__ import annotations

from ..interpreter.versions import bind, patcher
from ..report import Finding, merge

patch = patcher("symbolic")


class SymbolicSession:
    computes_outputs = False

    def __init__(self, max_findings: int = 50, **_ignored) -> None:
        self.max_findings = max_findings
        self.client = None

    def install(self) -> None:
        """Wrap every @triton.jit made from now on with triton-viz's Sanitizer
        (the way its `triton-sanitizer` command does), before the target is imported."""
        import triton
        import triton_viz
        from triton_viz.clients import Sanitizer
        from triton_viz.core.config import config as viz_config

        viz_config.enable_sanitizer = True
        self.client = Sanitizer(abort_on_error=False)
        tracer = triton_viz.trace(client=self.client)

        def traced(original):
            def jit(*args, **kwargs):
                options = dict(bind(original, args, kwargs).arguments)
                if options.pop("fn") is None:  # @triton.jit(...) with options: the decorator comes back
                    return lambda f: tracer(original(f, **options))
                return tracer(original(*args, **kwargs))

            return jit

        # @triton.autotune is left alone: it wraps the traced kernel, and tdebug's pinned autotuner runs
        # one config through it (triton-viz's own autotune wrapping crashes, see FACTS.md).
        patch(triton, "jit", traced)

    def begin_case(self) -> None:
        if self.client is not None and hasattr(self.client, "records"):
            self.client.records.clear()

    def end_case(self) -> list[Finding]:
        records = list(getattr(self.client, "records", []))
        findings = []
        for r in records:
            tb = r.user_code_tracebacks[-1] if r.user_code_tracebacks else None
            op = getattr(r.op_type, "__name__", str(r.op_type)).lower()
            t = r.tensor
            findings.append(Finding(
                check="bounds", source="triton-viz",
                message=f"{op} out of bounds (triton-viz symbolic sanitizer)",
                kernel=tb.func_name if tb else "", file=tb.filename if tb else "", line=tb.lineno if tb else 0,
                tensor=r.tensor_name or "", tensor_shape=tuple(getattr(t, "shape", ())),
                tensor_strides=tuple(t.stride()) if hasattr(t, "stride") else (),
                indices=[f"address {r.violation_address}"]))
        merged = merge(findings)
        return merged[: self.max_findings] if self.max_findings else merged
