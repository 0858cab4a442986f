"""tdebug check: the case generator, the tolerance table, poisoning, every-config checking, lint, the CLI."""

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from tdebug.catalogue.cases import plan_cases
from tdebug.catalogue.compare import compare
from tdebug.catalogue.inputs import randn
from tdebug.catalogue.poison import poison_, poison_mask, storage_poison_mask
from tdebug.catalogue.spec import Case, load_target
from tdebug.check.against_reference import check_file
from tdebug.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("shape", [(129, 127), (1, 64), (4, 2, 33, 16)])
def test_each_layout_has_the_strides_it_claims(shape):
    case = Case(shape)
    contiguous = randn(Case(shape, layout="contiguous"), shape)
    assert contiguous.is_contiguous() and contiguous.storage_offset() == 0
    sliced = randn(Case(shape, layout="sliced"), shape)
    assert sliced.shape == shape and sliced.stride(-2) > shape[-1] and sliced.stride(-1) == 1
    assert sliced.untyped_storage().nbytes() > sliced.numel() * 4
    transposed = randn(Case(shape, layout="transposed"), shape)
    assert transposed.shape == shape and transposed.stride(-2) == 1 and transposed.stride(-1) == shape[-2]
    offset = randn(Case(shape, layout="offset"), shape)
    assert offset.shape == shape and offset.storage_offset() == 37 and offset.is_contiguous()
    assert case.layout == "contiguous"


def test_one_dimensional_layouts():
    x = randn(Case((100,), layout="sliced"), (100,))
    assert x.shape == (100,) and x.stride() == (2,)
    assert randn(Case((100,), layout="transposed"), (100,)).is_contiguous()  # n/a in 1-D: falls back


def test_inputs_are_fresh_per_seed_and_never_zero():
    a = randn(Case((64, 64), seed=1), (64, 64))
    b = randn(Case((64, 64), seed=2), (64, 64))
    assert not torch.equal(a, b) and a.abs().min() > 0 or a.abs().mean() > 0.5


def test_case_matrix_checks_every_autotune_config_and_layout():
    spec = load_target(ROOT / "kernels" / "matmul.py").spec
    n_configs = len(spec.kernel.configs)
    cases = plan_cases(spec, quick=True)
    shapes = {c.shape for c in cases}
    for shape in shapes:
        configs = {c.config for c in cases if c.shape == shape}
        assert configs == set(range(n_configs))
        layouts = {c.layout for c in cases if c.shape == shape}
        assert layouts == {"contiguous", "sliced", "transposed", "offset"}
    assert {c.dtype for c in cases} == {"fp32", "fp16", "bf16"}
    assert {c.layout for c in cases if c.dtype == "bf16"} == {"contiguous"}  # quick CPU plans: bf16 contiguous


def test_a_correct_fp16_matmul_passes_the_tolerance_table():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(1024, 1024, generator=g).half()
    b = torch.randn(1024, 1024, generator=g).half()
    ref = a.double() @ b.double()
    out = (a.float() @ b.float()).half()  # fp32 accumulation, one fp16 rounding: what a right kernel gives
    comp = compare(out, ref)
    assert comp.ok, comp.summary()
    assert comp.max_abs > 0.02  # ...although an absolute 0.02 bound would reject it


def test_an_off_by_one_row_result_fails():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 128, generator=g).half()
    b = torch.randn(128, 256, generator=g).half()
    ref = a.double() @ b.double()
    out = (a.float() @ b.float()).half()
    shifted = torch.cat([out[1:], out[-1:]])
    comp = compare(shifted, ref)
    assert not comp.ok and comp.mismatches > 200 * 256
    assert comp.first_bad and comp.first_bad[0][0][0] == 0


def test_poisoned_elements_are_unwritten_not_wrong():
    ref = torch.randn(10, 10, dtype=torch.float64)
    out = ref.float().clone()
    poison_(out[7:])
    comp = compare(out, ref)
    assert not comp.ok and comp.unwritten == 30 and comp.mismatches == 0
    assert poison_mask(out).sum() == 30
    assert "30/100 elements never written" in comp.summary()


def test_check_reports_a_skipped_last_block_as_unwritten():
    result = check_file(DATA / "check_skip_last_block.py")
    (case,) = result.cases
    assert case.status == "fail"
    (comp,) = case.comparisons
    assert comp["unwritten"] == 1000 - 896 and comp["mismatches"] == 0


def test_check_catches_a_kernel_wrong_in_one_config_only():
    result = check_file(DATA / "check_one_bad_config.py")
    by_config = {c.case["config"]: c.status for c in result.cases}
    assert by_config == {0: "pass", 1: "fail", 2: "pass"}


def test_lint_flags_the_three_autotune_pitfalls():
    result = check_file(DATA / "check_lint.py")
    messages = " | ".join(f.message for f in result.lint)
    assert "fixed tuple" in messages
    assert "early_config_prune prune(configs)" in messages
    assert "single config" in messages
    assert result.cases[0].status == "pass"  # with one config Triton never calls prune: only lint sees it


def test_check_cli_passes_on_a_correct_kernel_and_writes_json(tmp_path):
    out = tmp_path / "r.json"
    r = CliRunner().invoke(cli, ["check", str(ROOT / "kernels" / "add.py"), "--quick", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "summary: 14 passed, 0 failed" in r.output  # 2 quick shapes x (fp32, fp16: 3 layouts; bf16: contiguous)
    data = json.loads(out.read_text())
    assert data["files"][0]["kernel"] == "add" and all(c["status"] == "pass" for c in data["files"][0]["cases"])


def test_check_cli_fails_with_exit_1_and_details():
    r = CliRunner().invoke(cli, ["check", str(DATA / "check_skip_last_block.py")])
    assert r.exit_code == 1
    assert "104/1000 elements never written" in r.output and "first unwritten: [896]" in r.output


def test_check_cli_usage_errors():
    r = CliRunner().invoke(cli, ["check"])
    assert r.exit_code == 2
    r = CliRunner().invoke(cli, ["check", str(DATA / "sanitize_scenarios.py")])
    assert r.exit_code == 2


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32,
                                   torch.int64, torch.uint64, torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64])
def test_every_int_and_float_dtype_is_poisoned_so_unwritten_elements_show(dtype):
    """uint16/32/64 outputs were left unpoisoned: their unwritten elements held whatever the allocator gave."""
    t = torch.arange(12).to(dtype)
    poison_(t[4:9])
    assert poison_mask(t).tolist() == [False] * 4 + [True] * 5 + [False] * 3
    assert storage_poison_mask(t).tolist() == poison_mask(t).tolist()
