"""Judging an output against its float64 reference: one dtype -> tolerance table, a verbose report.

The bound is |out - ref| <= atol + rtol * |ref| with atol scaled to the output's magnitude
(atol_factor * max|ref|): fp16 has 11 significant bits, so 1 ULP is 0.25 near 256 and a fixed
absolute bound of 0.02 rejects a correct fp16 matmul.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .poison import poison_mask

# dtype -> (rtol, atol_factor); atol = atol_factor * max(|ref|, 1)
TOLERANCES: dict[str, tuple[float, float]] = {
    "fp32": (1e-4, 1e-5),
    "fp16": (1e-2, 2e-3),
    "bf16": (2e-2, 1e-2),
    "fp64": (1e-10, 1e-12),
    "int": (0.0, 0.0),
}


def dtype_name(dtype: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
            torch.float64: "fp64"}.get(dtype, "int")


@dataclass
class Comparison:
    ok: bool
    numel: int
    unwritten: int = 0
    mismatches: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    rel_l2: float = 0.0
    nan_mismatches: int = 0
    inf_mismatches: int = 0
    first_bad: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)
    first_unwritten: list[tuple[int, ...]] = field(default_factory=list)
    shape_error: str = ""
    rtol: float = 0.0
    atol: float = 0.0

    def summary(self) -> str:
        if self.shape_error:
            return self.shape_error
        text = f"max abs err {self.max_abs:.3g}, max rel err {self.max_rel:.3g}, rel L2 {self.rel_l2:.3g}"
        if self.unwritten:
            text += f"; {self.unwritten}/{self.numel} elements never written"
        if self.mismatches:
            text += f"; {self.mismatches}/{self.numel} outside tolerance (rtol {self.rtol:g}, atol {self.atol:.3g})"
        if self.nan_mismatches or self.inf_mismatches:
            text += f"; NaN mismatches {self.nan_mismatches}, inf mismatches {self.inf_mismatches}"
        return text

    def details(self) -> list[str]:
        lines = []
        if self.first_unwritten:
            lines.append("first unwritten: " + ", ".join(str(list(i)) for i in self.first_unwritten))
        for idx, got, want in self.first_bad:
            lines.append(f"at {list(idx)}: got {got:.6g}, expected {want:.6g}")
        return lines


def _as_tuple(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def scaled_atol(want: torch.Tensor, atol_factor: float) -> float:
    """The absolute tolerance for a reference: atol_factor * max(|finite want|, 1)."""
    finite = torch.isfinite(want)
    return atol_factor * max(float(want[finite].abs().max()) if finite.any() else 1.0, 1.0)


def outside_tolerance(got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """True per element where got is not within atol + rtol * |want| of want (both float64): infinities must
    match exactly (same sign), NaN must match NaN."""
    finite = torch.isfinite(got) & torch.isfinite(want)
    close = torch.zeros_like(finite)
    close[finite] = (got[finite] - want[finite]).abs() <= atol + rtol * want[finite].abs()
    same_special = (~finite) & ((got == want) | (torch.isnan(got) & torch.isnan(want)))
    return ~(close | same_special)


def compare(out: torch.Tensor, ref: torch.Tensor, tol: tuple[float, float] | None = None,
            show: int = 5) -> Comparison:
    """Compare one output with its reference. `out` may hold poison where nothing was written."""
    if tuple(out.shape) != tuple(ref.shape):
        return Comparison(ok=False, numel=out.numel(),
                          shape_error=f"shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    name = dtype_name(out.dtype)
    rtol, atol_factor = tol or TOLERANCES[name]
    unwritten_mask = poison_mask(out).cpu()
    got = out.detach().cpu().to(torch.float64)
    want = ref.detach().cpu().to(torch.float64)
    atol = scaled_atol(want, atol_factor)
    diff = (got - want).abs()
    finite = torch.isfinite(got) & torch.isfinite(want)
    nan_mismatch = torch.isnan(got) != torch.isnan(want)
    bad = outside_tolerance(got, want, rtol, atol) & ~unwritten_mask
    inf_mismatch = (torch.isinf(got) | torch.isinf(want)) & bad
    fd = diff[finite & ~unwritten_mask]
    max_abs = float(fd.max()) if fd.numel() else 0.0
    rel = fd / want[finite & ~unwritten_mask].abs().clamp_min(atol if atol > 0 else 1e-300)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    both = finite & ~unwritten_mask
    denom = float(want[both].norm()) or 1.0
    rel_l2 = float((got[both] - want[both]).norm()) / denom
    comp = Comparison(
        ok=not bool(bad.any()) and not bool(unwritten_mask.any()),
        numel=out.numel(),
        unwritten=int(unwritten_mask.sum()),
        mismatches=int(bad.sum()),
        max_abs=max_abs,
        max_rel=max_rel,
        rel_l2=rel_l2,
        nan_mismatches=int((nan_mismatch & bad).sum()),
        inf_mismatches=int(inf_mismatch.sum()),
        rtol=rtol,
        atol=atol,
    )
    for idx in bad.nonzero()[:show].tolist():
        comp.first_bad.append((tuple(idx), float(got[tuple(idx)]), float(want[tuple(idx)])))
    comp.first_unwritten = [tuple(i) for i in unwritten_mask.nonzero()[:show].tolist()]
    return comp


def compare_outputs(outs, refs, tol=None) -> list[Comparison]:
    outs, refs = _as_tuple(outs), _as_tuple(refs)
    if len(outs) != len(refs):
        return [Comparison(ok=False, numel=0,
                           shape_error=f"{len(outs)} outputs but the reference returns {len(refs)}")]
    return [compare(o, r, tol) for o, r in zip(outs, refs)]
