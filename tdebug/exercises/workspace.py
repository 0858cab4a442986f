"""The bug catalogue as exercises: bugs/ metadata, the user's workspace, hints, solutions.

A bug file (bugs/NN_<kernel>_<slug>.py) is a copy of its fixed kernel (kernels/<kernel>.py) with one
seeded bug, a module docstring that tells the story, and a `BUG = tdebug.Bug(...)` block. Its
metadata is read from the source (no import: listing the catalogue runs no kernel code), so the BUG
block holds literals only.

The workspace (workspace/ at the repository root, or $TDEBUG_WORKSPACE) holds the user's copies,
workspace/NN_<kernel>_<slug>.py, and .state.json: hints shown and status per bug, and the path of the
last copy started ("last_started").
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import settings
from ..catalogue.files import repo_root
from ..runtime.files import FILE_MODE, write_atomic

GPU_DETECTORS = ("bench", "gpu:memcheck", "gpu:initcheck", "gpu:racecheck", "gpu:debug", "gpu:guard")
SANITIZE_KINDS = ("bounds", "uninit", "race", "unwritten", "assert", "overflow", "nan")
DETECTOR_NAMES = ("check", "lint", *(f"sanitize:{k}" for k in SANITIZE_KINDS), "symbolic", *GPU_DETECTORS)
CLEAN = "clean"  # caught_by == ["clean"]: the kernel is right; the exercise's bug is elsewhere (a user's test)
STATUSES = ("not started", "started", "failing", "unverified", "passed")


class ExerciseError(Exception):
    """A user error (unknown bug id, no workspace copy yet...): one line, no traceback."""


@dataclass(frozen=True)
class BugEntry:
    """One bug of the catalogue, as declared by its file."""

    id: int
    path: Path
    fixes: Path
    title: str
    symptom: str
    hints: tuple[str, ...]
    caught_by: tuple[str, ...]
    difficulty: str = "medium"
    shape: tuple[int, ...] | None = None
    layout: str = "contiguous"
    dtype: str = "fp32"
    gpu_only: bool = False
    config: int | None = None
    story: str = ""
    functions: frozenset[str] = field(default_factory=frozenset)

    @property
    def key(self) -> str:
        return f"{self.id:02d}"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def kernel(self) -> str:
        return self.fixes.stem

    @property
    def has_story_inputs(self) -> bool:
        return "story_inputs" in self.functions

    @property
    def has_user_check(self) -> bool:
        return "user_check" in self.functions

    @property
    def expects_clean(self) -> bool:
        return CLEAN in self.caught_by

    def cpu_detectors(self) -> list[str]:
        return [d for d in self.caught_by if d not in GPU_DETECTORS and d != CLEAN]

    def gpu_detectors(self) -> list[str]:
        return [d for d in self.caught_by if d in GPU_DETECTORS]

    def found_by(self) -> str:
        """The mode that finds it, as the bugs table shows it."""
        if self.expects_clean:
            return "nothing (kernel is right)"
        modes = []
        for d in self.caught_by:
            mode = "sanitize" if d.startswith("sanitize:") else d
            if mode not in modes:
                modes.append(mode)
        return ", ".join(modes)

    def shape_text(self) -> str:
        return "x".join(map(str, self.shape)) if self.shape else ""


# -- reading bug files --------------------------------------------------------------------------------

def _bug_call(tree: ast.Module) -> ast.Call | None:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "BUG" and isinstance(node.value, ast.Call)):
            return node.value
    return None


def parse_bug_file(path: Path, root: Path | None = None) -> BugEntry:
    """The BugEntry of a bugs/ file, read from its source (literals only in the BUG block)."""
    root = root or path.resolve().parent.parent
    text = path.read_text()
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise ExerciseError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    call = _bug_call(tree)
    if call is None:
        raise ExerciseError(f"{path}: no BUG = tdebug.Bug(...) block")
    try:
        meta = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
    except ValueError:
        raise ExerciseError(f"{path}: the BUG block must hold literals only") from None
    try:
        number = int(path.name.split("_", 1)[0])
    except ValueError:
        raise ExerciseError(f"{path}: a bug file is named NN_<kernel>_<slug>.py") from None
    functions = frozenset(n.name for n in tree.body if isinstance(n, ast.FunctionDef))
    return BugEntry(
        id=number, path=path.resolve(), fixes=(root / meta["fixes"]).resolve(), title=meta["title"],
        symptom=meta["symptom"], hints=tuple(meta["hints"]), caught_by=tuple(meta["caught_by"]),
        difficulty=meta.get("difficulty", "medium"),
        shape=tuple(meta["shape"]) if meta.get("shape") else None, layout=meta.get("layout", "contiguous"),
        dtype=meta.get("dtype", "fp32"), gpu_only=bool(meta.get("gpu_only", False)), config=meta.get("config"),
        story=ast.get_docstring(tree) or "", functions=functions)


def load_bugs(root: Path | None = None) -> list[BugEntry]:
    root = root or repo_root()
    entries = [parse_bug_file(p, root) for p in sorted((root / "bugs").glob("[0-9][0-9]_*.py"))]
    return sorted(entries, key=lambda b: b.id)


def find_bug(ident: str, bugs: list[BugEntry]) -> BugEntry:
    """A bug by number ("3", "03"), file name or path, or file stem."""
    text = str(ident).strip()
    name = Path(text).name
    for bug in bugs:
        if name in (bug.name, bug.path.stem):
            return bug
    if text.isdigit():
        for bug in bugs:
            if bug.id == int(text):
                return bug
    known = ", ".join(b.key for b in bugs)
    raise ExerciseError(f"no bug {ident!r} in the catalogue (ids: {known}); see tdebug bugs list")


# -- the code of a file, without its story -------------------------------------------------------------

def code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a catalogue file's code: without the module docstring, and without the
    exercise block (everything after the SPEC assignment: BUG, story inputs)."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        drop.update(range(body[0].lineno, body[0].end_lineno + 1))
    spec_end = None
    for node in body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "SPEC" for t in node.targets):
            spec_end = node.end_lineno
    if spec_end is not None:
        drop.update(range(spec_end + 1, len(lines) + 1))
    kept = [(n, line) for n, line in enumerate(lines, start=1) if n not in drop]
    # Leading and trailing blank lines are layout, not code.
    while kept and not kept[0][1].strip():
        kept.pop(0)
    while kept and not kept[-1][1].strip():
        kept.pop()
    return kept


def _ranges(a: int, b: int) -> str:
    return f"{a}" if b == 1 else f"{a},{b}"


def code_diff(old_text: str, new_text: str, old_name: str, new_name: str, context: int = 3) -> str:
    """A unified diff of the code of two catalogue files, with each file's real line numbers."""
    old, new = code_lines(old_text), code_lines(new_text)
    a = [line for _, line in old]
    b = [line for _, line in new]
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        start_a = old[i1][0] if i1 < len(old) else (old[-1][0] + 1 if old else 1)
        start_b = new[j1][0] if j1 < len(new) else (new[-1][0] + 1 if new else 1)
        out.append(f"@@ -{_ranges(start_a, i2 - i1)} +{_ranges(start_b, j2 - j1)} @@\n")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out += [" " + line for line in a[x1:x2]]
                continue
            out += ["-" + line for line in a[x1:x2]]
            out += ["+" + line for line in b[y1:y2]]
    return "".join(line if line.endswith("\n") else line + "\n" for line in out) if len(out) > 2 else ""


def apply_fix(copy_text: str, bug_text: str, fixed_text: str) -> str:
    """Apply the bug -> fixed code edits to a copy of the bug (its docstring and BUG block are kept).

    Each edited region must still read as in the bug file; raises ExerciseError otherwise."""
    bug_code, fixed_code = code_lines(bug_text), code_lines(fixed_text)
    a = [line for _, line in bug_code]
    b = [line for _, line in fixed_code]
    lines = copy_text.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    # Apply from the bottom up so that earlier line numbers stay valid.
    for tag, i1, i2, j1, j2 in reversed(matcher.get_opcodes()):
        if tag == "equal":
            continue
        if i1 < i2:
            start = bug_code[i1][0] - 1
            stop = bug_code[i2 - 1][0]
        else:
            start = stop = bug_code[i1][0] - 1 if i1 < len(bug_code) else bug_code[-1][0]
        if [ln.rstrip("\n") for ln in lines[start:stop]] != [ln.rstrip("\n") for ln in a[i1:i2]]:
            raise ExerciseError(f"the copy differs from the bug file at lines {start + 1}-{stop}: cannot apply the fix")
        lines[start:stop] = [ln if ln.endswith("\n") else ln + "\n" for ln in b[j1:j2]]
    return "".join(lines)


def solution_diff(bug: BugEntry, root: Path | None = None) -> str:
    root = root or repo_root()

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    if not bug.fixes.is_file():
        raise ExerciseError(f"bug {bug.key}: its fixed kernel {rel(bug.fixes)} is missing")
    return code_diff(bug.path.read_text(), bug.fixes.read_text(), rel(bug.path), rel(bug.fixes))


# -- the workspace -------------------------------------------------------------------------------------

def default_workspace(root: Path | None = None) -> Path:
    env = settings.get("TDEBUG_WORKSPACE")
    if env:
        return Path(env).resolve()
    return (root or repo_root()) / "workspace"


class Workspace:
    """The user's copies of the bugs and what tdebug remembers about them (.state.json).

    It never lies in the catalogue (bugs/, kernels/): a copy there would be the catalogue's own file.
    start, reset and check hold its lock (.lock), so that two of them never interleave; a reset keeps
    the user's version under a name no other reset can take, before the pristine copy replaces it."""

    def __init__(self, path: Path | None = None, root: Path | None = None) -> None:
        self.path = (path or default_workspace()).resolve()
        self.state_path = self.path / ".state.json"
        root = (root or repo_root()).resolve()
        for catalogue in (root / "bugs", root / "kernels"):
            if self.path == catalogue or catalogue in self.path.parents:
                raise ExerciseError(f"workspace {self.path} is in the catalogue ({catalogue}): its copies would "
                                    "replace the catalogue's files; use another folder")

    @contextlib.contextmanager
    def lock(self, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
        """Hold the workspace's lock (waiting for another tdebug bugs start/reset/check to finish)."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            handle = open(self.path / ".lock", "a")  # noqa: SIM115 - closed below
        except OSError as e:
            raise ExerciseError(f"workspace {self.path}: cannot write there ({e.strerror})") from None
        with handle as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    on_wait()
                fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def copy_path(self, bug: BugEntry) -> Path:
        return self.path / bug.name

    # state
    def load_state(self) -> dict:
        try:
            state = json.loads(self.state_path.read_text())
        except FileNotFoundError:
            state = {}
        except (OSError, ValueError):
            state = {}  # an unreadable state file is started afresh, never fatal
        if not isinstance(state, dict):
            state = {}
        state.setdefault("bugs", {})
        return state

    def save_state(self, state: dict) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            write_atomic(self.state_path, json.dumps(state, indent=2, sort_keys=True) + "\n")
        except OSError as e:
            raise ExerciseError(f"workspace {self.path}: cannot write there ({e.strerror})") from None

    def _entry(self, state: dict, bug: BugEntry) -> dict:
        return state["bugs"].setdefault(bug.key, {"hints": 0, "status": "not started"})

    def status(self, bug: BugEntry) -> str:
        entry = self.load_state()["bugs"].get(bug.key, {})
        status = entry.get("status", "not started")
        if status == "not started" and self.copy_path(bug).exists():
            return "started"
        return status

    def set_status(self, bug: BugEntry, status: str) -> None:
        state = self.load_state()
        entry = self._entry(state, bug)
        entry["status"] = status
        entry["checked_at"] = time.strftime("%Y-%m-%d %H:%M:%S")
        self.save_state(state)

    def hints_shown(self, bug: BugEntry) -> int:
        return int(self.load_state()["bugs"].get(bug.key, {}).get("hints", 0))

    def next_hint(self, bug: BugEntry) -> tuple[int, str, bool]:
        """(number, text, is_repeat): the next hint not yet shown (1-based); the last one again when all were."""
        if not bug.hints:
            raise ExerciseError(f"bug {bug.key} has no hints")
        state = self.load_state()
        entry = self._entry(state, bug)
        shown = int(entry.get("hints", 0))
        if shown >= len(bug.hints):
            return len(bug.hints), bug.hints[-1], True
        entry["hints"] = shown + 1
        self.save_state(state)
        return shown + 1, bug.hints[shown], False

    # copies
    def start(self, bug: BugEntry) -> tuple[Path, bool]:
        """Copy the bug into the workspace; an existing copy is never overwritten. (path, created)."""
        dest = self.copy_path(bug)
        self.path.mkdir(parents=True, exist_ok=True)
        created = _create(dest, bug.path.read_bytes())
        state = self.load_state()
        entry = self._entry(state, bug)
        if entry.get("status", "not started") == "not started":
            entry["status"] = "started"
        state["last_started"] = str(dest)
        self.save_state(state)
        return dest, created

    def require_copy(self, bug: BugEntry) -> Path:
        dest = self.copy_path(bug)
        if not dest.is_file():
            raise ExerciseError(f"no workspace copy of bug {bug.key} yet: run tdebug bugs start {bug.key}")
        return dest

    def reset(self, bug: BugEntry) -> tuple[Path, Path | None]:
        """Restore a pristine copy; the user's version is kept as NN_...py.bak-<timestamp>[-N]. (path, backup).
        The version is linked under its backup name first, then the pristine copy is renamed over the
        copy: at every moment the user's edit is in one file or the other."""
        dest = self.copy_path(bug)
        self.path.mkdir(parents=True, exist_ok=True)
        backup = _keep(dest) if dest.exists() else None
        write_atomic(dest, bug.path.read_bytes())
        state = self.load_state()
        entry = self._entry(state, bug)
        entry["status"] = "started"
        state["last_started"] = str(dest)
        self.save_state(state)
        return dest, backup


def _create(path: Path, data: bytes) -> bool:
    """Write a new file at `path`, never over an existing one (whoever made it: the user, a concurrent run)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, FILE_MODE)
        os.link(tmp, path)  # fails if path exists: no check-then-write race
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _keep(path: Path) -> Path:
    """A backup of `path` under a name no one else holds (.bak-<time>, .bak-<time>-2, ...): a hard link,
    created only if the name is free; a copy made the same way where links are not supported."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        backup = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            os.link(path, backup)
            return backup
        except FileExistsError:
            pass
        except OSError:  # no hard links on this file system
            if _create(backup, path.read_bytes()):
                return backup
        n += 1
