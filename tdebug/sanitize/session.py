"""The interpreter sanitizer, installed in the worker: listens to the interpreter's memory ops.

Why not triton-viz's Client hooks: they need each kernel wrapped with `triton_viz.trace` (we sanitize
unmodified scripts and autotuned kernels, where its launch path crashes, see FACTS.md), and they
patch every language op, arithmetic included, for the lifetime of a launch. The interpreter funnels
every memory access through four InterpreterBuilder methods (create_masked_load, create_masked_store,
create_atomic_rmw, create_atomic_cas; unmasked, block-pointer and descriptor loads/stores all end
in the masked ones: interpreter.hooks.memory_events hands them to this session's `before`), and every launch
through GridExecutor, so those five are the whole interface: cheaper, and it works for any kernel the
interpreter runs. Two more follow what the memory
model needs beyond the accesses: atomics into spin locks (locks.py) and pointers built from integers
(live.py, pointer tables).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..catalogue.poison import ALLOCATIONS
from ..interpreter.batched import batch_memory, grid_loop, prescan, program_axis
from ..interpreter.batched.launch import current_batch
from ..interpreter.frames import user_frame
from ..interpreter.hooks import memory_events, provenance
from ..interpreter.semantics.block_pointers import unchecked_dims
from ..interpreter.versions import patcher
from ..report import Finding, merge
from ..runtime.job import SanitizeOptions
from . import admission, live, locks
from .checks import CHECKS
from .memory import LaunchChecker
from .nan import NanTracker
from .shadow import ArgView
from .unwritten import Evidence, ProbeChecker, probe, unwritten_elements, unwritten_findings
from .written import OUTPUTS, TorchWrites

patch = patcher("sanitizer")


class SanitizerSession:
    def __init__(self, checks: list[str] | None = None, max_findings: int = 50) -> None:
        self.checks = frozenset(checks) if checks else CHECKS
        self.max_findings = max_findings
        self.enabled = True  # False: launches run unchecked (pytest's @pytest.mark.tdebug(skip=True))
        self.current: LaunchChecker | None = None
        self.case_findings: list[Finding] = []
        # Tensors some launch of the case stored to: (storage, name) -> view
        self.case_stored: dict[tuple[int, str], ArgView] = {}
        # Storages with unwritten elements that a program past some launch's grid would write: ptr -> evidence
        self.case_evidence: dict[int, Evidence] = {}
        self.config = ""  # the running launch's autotune config, as findings name it
        self.probing: tuple[tuple[int, int, int], tuple[int, int, int], ProbeChecker] | None = None
        self.launch_host_args: tuple | None = None  # the running launch's host copies of its arguments
        self.nan = NanTracker(self._tensor_name) if "nan" in self.checks else None
        self.torch_writes: TorchWrites | None = None  # torch ops' writes and reads of a case (written.py)

    # -- per case (the worker calls these around each launch of a catalogue case, or a whole script) --
    def begin_case(self) -> None:
        self.case_findings = []
        self.case_stored = {}
        self.case_evidence = {}
        if self.torch_writes is None and ({"uninit", "unwritten"} & self.checks) and self.enabled:
            self.torch_writes = TorchWrites(check_reads="uninit" in self.checks)
            self.torch_writes.__enter__()

    def end_case(self) -> list[Finding]:
        findings = list(self.case_findings)
        if self.torch_writes is not None:
            mode, self.torch_writes = self.torch_writes, None
            mode.__exit__(None, None, None)
            findings += mode.take_findings()
        if "unwritten" in self.checks:
            for view in self.case_stored.values():
                findings += unwritten_findings(view, self.case_evidence.get(view.storage_ptr))
        self.case_stored = {}
        self.case_evidence = {}
        merged = merge(findings)
        return merged[: self.max_findings] if self.max_findings else merged

    # -- patches ------------------------------------------------------------------------------------
    def install(self) -> None:
        """Listen to each launch (grid_loop's hooks: its begin, end and probe) and to the builder's memory ops
        (memory_events reads their arguments by name: the same checks fit Triton 3.6's and 3.8's differing
        signatures)."""
        from triton.runtime import interpreter

        from ..interpreter.hooks import memory_guard, overflow
        from ..interpreter.semantics import viz_decorators

        viz_decorators.install()  # a kernel under @triton_viz.trace would hide its accesses from this session
        overflow.set_strict("overflow-all" in self.checks)
        memory_guard.stand_aside("bounds" in self.checks)  # the checker refuses those lanes itself
        if self.nan is not None:
            self.nan.install()  # layer "nan", below "sanitizer": its store check sees the mask the sanitizer cut
        session = self
        builder = interpreter.interpreter_builder
        # its memory ops, and the launch: around_launch, host_args, on_host_args (grid_loop's listener hooks);
        # and grid_loop's undo of a batch it splits: our part of it too
        memory_events.listen("sanitizer", self)
        admission.install()  # a large launch waits its turn for host memory (pytest-xdist workers on one machine)
        patch(builder, "set_grid_dim", lambda original: _virtual_grid(session, original, "grid_dim", 1))
        patch(builder, "set_grid_idx", lambda original: _virtual_grid(session, original, "grid_idx", 0))
        locks.install(lambda: session.current)
        live.install(lambda: session.current)

    # -- the engine's memory events (interpreter.hooks.memory_events) ---------------------------------------------
    def before(self, access: memory_events.Access) -> None:
        """Check a memory op's lanes; those the checker refuses (reported) lose their mask and never run."""
        from triton.runtime.interpreter import TensorHandle

        volatile = access.kind == "load" and bool(access.call.arguments.get("is_volatile"))
        if volatile and program_axis.lane_programs() is not None:
            raise program_axis.Unported("a volatile load (a flag between programs)")
        safe = self._check(access, volatile)
        if safe is None:
            return
        if access.op == "create_atomic_cas":
            if not safe.all():  # atomic_cas has no mask: skip the whole op rather than touch memory we do not own
                if program_axis.lane_programs() is not None:  # (for every program of a batch: one at a time)
                    raise program_axis.Unported("an atomic_cas out of bounds")
                cmp = access.call.arguments["cmp"]
                access.refuse(TensorHandle(np.zeros_like(cmp.data), cmp.dtype.scalar))
            return
        access.mask = TensorHandle(safe, access.mask.dtype)

    # -- the batched engine's checkpoints (grid_loop.Listener) ---------------------------------------------
    def checkpoint(self) -> tuple:
        return self.current, self.current.checkpoint() if self.current is not None else None

    def rollback(self, token: tuple) -> None:
        checker, mine = token
        if checker is not None and mine is not None:
            checker.rollback(mine)

    def commit(self, token: tuple) -> None:
        checker, mine = token
        if checker is not None and mine is not None:
            checker.commit(mine)

    def serial_reason(self, token: tuple) -> str | None:
        """A race between programs of a batch: which access of the pair is reported, and what memory holds
        after, depend on the programs' order; the serial engine's order is the reference."""
        checker, mine = token
        if checker is None or mine is None:
            return None
        before = sum(i.count for i in mine[0].values() if i.check == "race")
        now = sum(i.count for i in checker.issues.values() if i.check == "race")
        return "a race between programs" if now > before else None

    # -- a replayed launch (launch_replay.py) ---------------------------------------------------------------------
    def replay_step(self, access: memory_events.Access, recording) -> Callable | None:
        """What this session does again for a recorded load or store at a replay of its launch: its bounds and its
        races follow from the key (none, or the launch would not have been recorded); what depends on memory is
        done again (LaunchChecker.replay_load: an uninitialised read stops the replay; replay_store: the written
        marks)."""
        r = access.resolution
        if self.probing is not None or self.current is None or r is None or access.kind == "atomic":
            return None
        index, elsize, kind, elements = recording.storage_index(r.storage), r.elsize, access.kind, r.elements

        def step(replay) -> None:
            checker = self.current
            if checker is None:  # (off for this launch: pytest's skip mark)
                return
            ptr = replay.ptr(index)
            if kind != "load":
                checker.replay_store(checker.shadow_for(ptr, elsize), elements)
            elif "uninit" in checker.checks and checker.may_be_cold(ptr, elsize):
                checker.replay_load(checker.shadow_for(ptr, elsize), elements)

        return step

    def unreplayable(self, token: tuple) -> str | None:
        """Why the batch since `token` cannot be replayed: a finding, a storage reached by a pointer built from an
        integer, locks ordering its accesses (None: it can)."""
        checker, mine = token
        if self.probing is not None:
            return "a program past the grid"
        if checker is None or mine is None:
            return None
        if sum(i.count for i in checker.issues.values()) != sum(i.count for i in mine[0].values()):
            return "a finding"
        if checker.beyond_arguments() or (checker.order is not None and checker.order.active):
            return "pointers built from integers, or locks"
        return None

    # -- launches (grid_loop's listener hooks) ------------------------------------------------------
    def around_launch(self, proceed, executor, *args, **kwargs):
        """The launch, then its end (the shadows judged), then the probe past the grid: the launch again, one
        program at a time through the layers inside this one."""
        if self.probing is not None:
            return proceed(executor, *args, **kwargs)
        try:
            out = proceed(executor, *args, **kwargs)
        except BaseException:
            self._end_launch()
            self.launch_host_args = None
            raise
        checker = self._end_launch()
        try:
            self._probe_past_grid(executor, args, kwargs, checker, proceed)
        finally:
            self.launch_host_args = None
        return out

    def host_args(self, launch) -> tuple | None:
        """While probing: the launch's own host copies (on a GPU: not fresh ones from the device)."""
        return self.launch_host_args if self.probing is not None else None

    def on_host_args(self, launch, args_hst: list, kwargs_hst: dict) -> None:
        self.launch_host_args = (args_hst, kwargs_hst)
        if self.probing is None:
            self._begin_launch(launch.executor, args_hst, kwargs_hst, launch.args_dev,
                               {k: launch.kwargs[k] for k in kwargs_hst if k in launch.kwargs})

    def _begin_launch(self, executor, args_hst, kwargs_hst, args_dev=(), kwargs_dev=None) -> None:
        if not self.enabled:
            return
        import torch

        fn = executor.fn
        names = list(executor.arg_names)
        bound = dict(zip(names, args_hst))
        bound.update(kwargs_hst)
        # The caller's tensors: on a GPU the interpreter runs on host copies of them, made for this launch.
        homes = dict(zip(names, args_dev))
        homes.update(kwargs_dev or {})
        views = []
        tensor = torch.Tensor
        for name, value in bound.items():
            kind = type(value)
            if kind is int or kind is float or kind is bool or value is None:
                continue
            t = value if kind is tensor else getattr(value, "base", value)  # TensorWrapper
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                home = homes.get(name)
                if home is not value:  # (a CPU tensor is its own host copy)
                    home = getattr(home, "base", home)
                    home = home if isinstance(home, torch.Tensor) and home.device != t.device else None
                else:
                    home = None
                home_ptr = home.untyped_storage().data_ptr() if home is not None else storage.data_ptr()
                views.append(ArgView(name, t, storage.data_ptr(), storage.nbytes(), t.element_size(),
                                     was_empty=ALLOCATIONS.was_empty(home_ptr), home=home))
        kernel = getattr(fn, "__name__", "kernel")
        self.current = LaunchChecker(kernel, views, self.checks, order=locks.LockOrder(),
                                     reach=live.PointerReach(views))
        if prescan.uses_volatile(fn):
            self.current.order.use_flags()
        self.config = launch_config(kernel)

    def _end_launch(self) -> LaunchChecker | None:
        checker, self.current = self.current, None
        if checker is None:
            return None
        checker.settle_marks()
        found = checker.findings() + (self.nan.findings() if self.nan is not None else [])
        for f in found:
            f.config = self.config
        self.case_findings += found
        # Only tensors a launch stored to can have unwritten elements.
        for shadow in checker.shadows_made():
            if shadow.stored:
                for v in shadow.views:
                    self.case_stored.setdefault((v.home_ptr, v.name), v)
                    if v.was_empty:
                        OUTPUTS.stored(v.home_ptr, checker.kernel, v.name)
        return checker

    def _check(self, access: memory_events.Access, volatile: bool = False) -> np.ndarray | None:
        """The checker's verdict on the access's lanes (None: every lane may run); a batched load or store whose
        every active lane it resolved to one CPU storage gets that resolution (`access.resolution`), which the
        memory ops below run on (batch_memory)."""
        kind, ptrs, mask, unmasked = access.kind, access.ptrs, access.mask, access.unmasked
        checker = self.current if self.probing is None else self.probing[2]
        if checker is None:
            return None
        if self.probing is not None:
            checker.masked = mask is not None and not unmasked
        from triton.runtime.interpreter import interpreter_builder

        gx, gy, gz = interpreter_builder.grid_dim
        checker.one_program = gx * gy * gz == 1 and self.probing is None
        checker.set_grid(gx, gy, gz)
        batch = program_axis.lane_programs()
        pid_of = None
        if batch is not None:  # the batched engine: the lanes of every program of a batch at once
            pid = None
            linear = batch.linear_pids(gx, gy).astype(np.int32)
            linear = linear.reshape((-1,) + (1,) * (np.ndim(ptrs.data) - 1))

            def pid_of(n: int) -> tuple[int, int, int]:
                return n % gx, (n // gx) % gy, n // (gx * gy)

            if checker.order is not None:
                checker.order.lanes_of(batch.serial)
        else:
            pid = tuple(interpreter_builder.grid_idx)
            linear = pid[0] + gx * (pid[1] + gy * pid[2])
            if checker.order is not None:  # (in a batch: an op run one program at a time, for viz's traces)
                running = current_batch()
                checker.order.enter(linear, gx * gy * gz, None if running is None else running.serial)
        frame = user_frame()
        where = (frame.f_code.co_filename, frame.f_lineno) if frame else ("", 0)
        mask_data = None if (mask is None or unmasked) else np.asarray(mask.data)
        how = ""
        unchecked = unchecked_dims(mask)
        if unchecked:  # a block pointer's mask holds only the dims in boundary_check
            dims = ", ".join(map(str, unchecked))
            how = f"block-pointer {kind} without boundary_check on dim{'s' if len(unchecked) > 1 else ''} {dims}"
            if len(unchecked) == len(np.shape(mask_data)):
                mask_data = None
        if not checker.shadows and (checker.reach is None or not checker.reach.bases.size):
            return None  # no tensor arguments, no pointers built from integers: nothing to check against
        checker.volatile = volatile
        safe = checker.access(kind, np.asarray(ptrs.data), mask_data, pid, linear, where, how, pid_of,
                              provenance.origin(ptrs))
        if kind != "load" and batch is None and checker.order is not None and checker.order.flags:
            checker.order.tick()  # a store publishes what the program did before it (flags: locks.py)
        if batch is not None and safe is None and checker.resolved is not None and kind != "atomic" \
                and checker.resolved[0].views[0].tensor.device.type == "cpu":  # its memory readable by numpy
            s, aligned, elements, lanes = checker.resolved
            access.resolution = batch_memory.Resolved(ptrs.data, None if mask is None else mask.data,
                                                      s.array, s.elsize, aligned, elements, lanes, s.ptr)
        return safe

    def _tensor_name(self, addr: int) -> str:
        """The name of the launch's tensor argument whose storage holds a byte address ('' if none)."""
        checker = self.current
        for s in checker.shadows if checker else ():
            if s.ptr <= addr < s.ptr + s.nbytes:
                return s.view_of((addr - s.ptr) // s.elsize).name
        return ""

    # -- programs past the grid (the unwritten check's evidence) --------------------------------------
    def _probe_past_grid(self, executor, args, kwargs, checker: LaunchChecker | None, original_call) -> None:
        """After a launch that left elements of a torch.empty tensor unwritten: would a program past the
        grid write them under the kernel's own masks? (tdebug.sanitize.unwritten)"""
        if "unwritten" not in self.checks or checker is None:
            return
        unwritten = unwritten_elements(checker.shadows_made())
        if not unwritten:
            return
        import copy

        from triton.runtime import interpreter

        from ..interpreter.patches import STATE, forget_launches

        grid = tuple(interpreter.interpreter_builder.grid_dim)
        views = [v for s in checker.shadows for v in s.views]
        records = len(STATE.launches)

        def run_program(pid: tuple[int, int, int], probe_checker: ProbeChecker) -> None:
            one = copy.copy(executor)
            one.grid, one.pre_run_hooks = (1, 1, 1), []
            self.probing = (pid, grid, probe_checker)
            try:
                with grid_loop.serially("a program past the grid (the unwritten check's probe)"):
                    original_call(one, *args, **kwargs)
            finally:
                self.probing = None
                forget_launches(records)

        if self.nan is not None:
            self.nan.enabled = False
        try:
            found = probe(run_program, checker.kernel, self.config, views, grid, unwritten)
        finally:
            if self.nan is not None:
                self.nan.enabled = True
        for ptr, evidence in found.items():
            self.case_evidence.setdefault(ptr, evidence)


def session_for(options: SanitizeOptions, engine: str = "tdebug"):
    """The sanitizer session a job's options ask for, not installed yet: tdebug's own, or triton-viz's
    symbolic one (`--engine symbolic`)."""
    if engine == "symbolic":
        from .symbolic import SymbolicSession as Session
    else:
        Session = SanitizerSession
    return Session(checks=list(options.checks), max_findings=options.max_findings)


def _virtual_grid(session: SanitizerSession, original, attribute: str, part: int):
    """set_grid_dim / set_grid_idx: while the session probes, the one program run is the virtual one."""
    def setter(*args, **kwargs):
        if session.probing is None:
            return original(*args, **kwargs)
        from triton.runtime.interpreter import interpreter_builder

        setattr(interpreter_builder, attribute, session.probing[part])
        return None

    return setter


def launch_config(kernel: str) -> str:
    """The autotune config the launch of `kernel` now starting runs ('' when not autotuned)."""
    from ..interpreter.patches import STATE

    record = STATE.launches[-1] if STATE.launches else None
    if record is None or record.kernel != kernel or not record.config:
        return ""
    return f"#{record.config_index} {record.config}"
