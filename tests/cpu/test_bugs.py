"""The bug catalogue's files: each a copy of its fixed kernel with one small edit, a story, a BUG block
whose metadata tdebug reads without importing the file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tdebug.catalogue.spec import Bug, has_spec, load_target
from tdebug.cli.bugs import repro_command
from tdebug.exercises.workspace import (
    CLEAN,
    DETECTOR_NAMES,
    GPU_DETECTORS,
    apply_fix,
    code_lines,
    find_bug,
    load_bugs,
    solution_diff,
)

ROOT = Path(__file__).resolve().parents[2]
BUGS = load_bugs(ROOT)
IDS = [b.key for b in BUGS]


def test_catalogue_has_at_least_14_bugs_numbered_without_gaps():
    assert len(BUGS) >= 14
    assert [b.id for b in BUGS] == list(range(1, len(BUGS) + 1))


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_file_name_names_its_fixed_kernel(bug):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.py", bug.name)
    assert bug.name.startswith(f"{bug.key}_{bug.kernel}_"), "bugs/NN_<kernel>_<slug>.py, kernel = the fixed file"
    assert bug.fixes.parent == ROOT / "kernels" and bug.fixes.is_file()
    assert has_spec(bug.fixes) and has_spec(bug.path)


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_metadata_read_from_source_matches_the_imported_bug(bug):
    target = load_target(bug.path)
    declared = target.bug
    assert isinstance(declared, Bug)
    assert (ROOT / declared.fixes).resolve() == bug.fixes
    assert declared.title == bug.title and declared.symptom == bug.symptom
    assert tuple(declared.hints) == bug.hints and tuple(declared.caught_by) == bug.caught_by
    assert (declared.difficulty, declared.layout, declared.dtype, declared.gpu_only, declared.config) == (
        bug.difficulty, bug.layout, bug.dtype, bug.gpu_only, bug.config)
    assert (tuple(declared.shape) if declared.shape else None) == bug.shape
    # The bug's case is a valid case of its spec.
    if bug.shape:
        assert target.spec.normalize_shape(bug.shape) == bug.shape
        assert bug.dtype in ("fp32", "fp16", "bf16") and bug.layout in target.spec.layouts
    if bug.config is not None:
        from tdebug.catalogue.cases import autotune_configs

        assert 0 <= bug.config < len(autotune_configs(target.spec.kernel))


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_story_hints_and_expected_detectors(bug):
    assert "What you were doing" in bug.story and "What you saw" in bug.story
    assert len(bug.hints) >= 3 and all(len(h) > 20 for h in bug.hints)
    assert bug.difficulty in ("easy", "medium", "hard")
    assert bug.caught_by and all(d in DETECTOR_NAMES or d == CLEAN for d in bug.caught_by)
    if bug.expects_clean:
        assert bug.caught_by == (CLEAN,) and bug.has_user_check, "a correct kernel's exercise is its user_check"
    elif bug.gpu_only:
        assert set(bug.caught_by) <= set(GPU_DETECTORS)
        assert "CPU" in bug.story, "a GPU-only bug says why the CPU cannot show it"
    else:
        assert bug.cpu_detectors(), "every bug is caught by a detector that runs on a CPU-only machine"


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_the_bug_is_one_small_edit_of_its_fixed_kernel(bug):
    diff = solution_diff(bug, ROOT)
    changed = [ln for ln in diff.splitlines()[2:] if ln[:1] in "+-"]
    assert changed, "the bug file's code is identical to its fixed kernel"
    assert len(changed) <= 12, f"more than one small edit:\n{diff}"
    assert diff.count("\n@@ ") + diff.startswith("@@") <= 2, f"edits in too many places:\n{diff}"


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_applying_the_solution_gives_the_fixed_code(bug):
    fixed = apply_fix(bug.path.read_text(), bug.path.read_text(), bug.fixes.read_text())
    assert [ln for _, ln in code_lines(fixed)] == [ln for _, ln in code_lines(bug.fixes.read_text())]
    # The story and the BUG block stay.
    assert fixed.startswith('"""Exercise') and "BUG = tdebug.Bug(" in fixed


@pytest.mark.parametrize("bug", BUGS, ids=IDS)
def test_every_bug_has_a_command_that_shows_it(bug):
    lines = repro_command(bug, f"bugs/{bug.name}")
    assert lines and all(line.startswith("tdebug ") for line in lines)


def test_find_bug_by_number_name_or_path():
    third = BUGS[2]
    for ident in ("3", "03", third.name, third.path.stem, f"bugs/{third.name}"):
        assert find_bug(ident, BUGS) is third
    from tdebug.exercises.workspace import ExerciseError

    with pytest.raises(ExerciseError, match="no bug"):
        find_bug("99", BUGS)
