"""The interpreter sanitizer, installed in the worker: patches the interpreter's memory ops.

Why not triton-viz's Client hooks: they need each kernel wrapped with `triton_viz.trace` (we sanitize
unmodified scripts and autotuned kernels, where its launch path crashes, see FACTS.md), and they
patch every language op, arithmetic included, for the lifetime of a launch. The interpreter funnels
every memory access through four InterpreterBuilder methods (create_masked_load, create_masked_store,
create_atomic_rmw, create_atomic_cas; unmasked, block-pointer and descriptor loads/stores all end
in the masked ones), and every launch through GridExecutor, so wrapping those five is the whole
interface: cheaper, and it works for any kernel the interpreter runs.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..catalogue.poison import ALLOCATIONS
from ..interpreter.frames import user_frame
from ..report import Finding, merge
from .memory import ArgView, LaunchChecker, unwritten_findings

CHECKS = frozenset({"bounds", "uninit", "race", "unwritten", "assert", "overflow"})


class SanitizerSession:
    def __init__(self, checks: list[str] | None = None, max_findings: int = 50) -> None:
        self.checks = frozenset(checks) if checks else CHECKS
        self.max_findings = max_findings
        self.enabled = True  # False: launches run unchecked (pytest's @pytest.mark.tdebug(skip=True))
        self.current: LaunchChecker | None = None
        self._unmasked = False
        self.case_findings: list[Finding] = []
        # Tensors some launch of the case stored to: (storage, name) -> (kernel, view, kernel's def line)
        self.case_stored: dict[tuple[int, str], tuple[str, ArgView, tuple[str, int]]] = {}

    # -- per case (the worker calls these around each launch of a catalogue case, or a whole script) --
    def begin_case(self) -> None:
        self.case_findings = []
        self.case_stored = {}

    def end_case(self) -> list[Finding]:
        findings = list(self.case_findings)
        if "unwritten" in self.checks:
            for kernel, view, where in self.case_stored.values():
                findings += unwritten_findings(kernel, [view], where)
        self.case_stored = {}
        merged = merge(findings)
        return merged[: self.max_findings] if self.max_findings else merged

    # -- patches ------------------------------------------------------------------------------------
    def install(self) -> None:
        from triton.runtime import interpreter

        session = self
        executor = interpreter.GridExecutor
        builder = interpreter.interpreter_builder
        original_init_args = executor._init_args_hst
        original_call = executor.__call__

        def _init_args_hst(self, args_dev, kwargs):
            args_hst, kwargs_hst = original_init_args(self, args_dev, kwargs)
            session._begin_launch(self, args_hst, kwargs_hst)
            return args_hst, kwargs_hst

        def __call__(self, *args, **kwargs):
            try:
                return original_call(self, *args, **kwargs)
            finally:
                session._end_launch()

        executor._init_args_hst = _init_args_hst
        executor.__call__ = __call__

        load, store = builder.create_masked_load, builder.create_masked_store
        rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

        def create_masked_load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
            safe = session._check("load", ptrs, mask)
            if safe is not None:
                mask = interpreter.TensorHandle(safe, mask.dtype)
            return load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile)

        def create_masked_store(ptrs, value, mask, cache_modifier, eviction_policy):
            safe = session._check("store", ptrs, mask)
            if safe is not None:
                mask = interpreter.TensorHandle(safe, mask.dtype)
            return store(ptrs, value, mask, cache_modifier, eviction_policy)

        def create_atomic_rmw(rmw_op, ptr, val, mask, sem, scope):
            safe = session._check("atomic", ptr, mask)
            if safe is not None:
                mask = interpreter.TensorHandle(safe, mask.dtype)
            return rmw(rmw_op, ptr, val, mask, sem, scope)

        def create_atomic_cas(ptr, cmp, val, sem, scope):
            safe = session._check("atomic", ptr, None)
            if safe is not None and not safe.all():
                # atomic_cas has no mask: skip the whole op rather than touch memory we do not own.
                return interpreter.TensorHandle(np.zeros_like(cmp.data), cmp.dtype.scalar)
            return cas(ptr, cmp, val, sem, scope)

        def unmasked(plain):
            """create_load / create_store: the masked op they call gets an all-true mask the kernel
            never wrote; flag it so the finding says 'no mask'."""

            def call(*args):
                session._unmasked = True
                try:
                    return plain(*args)
                finally:
                    session._unmasked = False

            return call

        create_load, create_store = unmasked(builder.create_load), unmasked(builder.create_store)
        builder.create_load = create_load
        builder.create_store = create_store
        builder.create_masked_load = create_masked_load
        builder.create_masked_store = create_masked_store
        builder.create_atomic_rmw = create_atomic_rmw
        builder.create_atomic_cas = create_atomic_cas

    # -- launches ------------------------------------------------------------------------------------
    def _begin_launch(self, executor, args_hst, kwargs_hst) -> None:
        if not self.enabled:
            return
        import torch

        fn = executor.fn
        names = list(executor.arg_names)
        bound = dict(zip(names, args_hst))
        bound.update(kwargs_hst)
        views = []
        for name, value in bound.items():
            t = getattr(value, "base", value)  # TensorWrapper
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                views.append(ArgView(name, t, storage.data_ptr(), storage.nbytes(), t.element_size(),
                                     was_empty=ALLOCATIONS.was_empty(storage.data_ptr())))
        kernel = getattr(fn, "__name__", "kernel")
        try:
            where = (inspect.getsourcefile(fn) or "", fn.__code__.co_firstlineno)
        except TypeError:
            where = ("", 0)
        self.current = LaunchChecker(kernel, views, self.checks)
        self._where = where

    def _end_launch(self) -> None:
        checker, self.current = self.current, None
        if checker is None:
            return
        self.case_findings += checker.findings()
        # Only tensors a launch stored to can have unwritten elements.
        for shadow in checker.shadows:
            if shadow.stored:
                for v in shadow.views:
                    self.case_stored.setdefault((v.storage_ptr, v.name), (checker.kernel, v, self._where))

    def _check(self, kind: str, ptrs, mask) -> np.ndarray | None:
        checker = self.current
        if checker is None:
            return None
        from triton.runtime.interpreter import interpreter_builder

        pid = tuple(interpreter_builder.grid_idx)
        gx, gy, _ = interpreter_builder.grid_dim
        linear = pid[0] + gx * (pid[1] + gy * pid[2])
        frame = user_frame()
        where = (frame.f_code.co_filename, frame.f_lineno) if frame else ("", 0)
        mask_data = None if (mask is None or self._unmasked) else np.asarray(mask.data)
        if not checker.shadows:
            return None  # a launch with no tensor arguments: nothing to check against
        return checker.access(kind, np.asarray(ptrs.data), mask_data, pid, linear, where)
