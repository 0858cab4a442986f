"""Every environment variable tdebug reads, parsed in one place with the rules of its matching option: a
choice case-insensitive where the option is, a number in range, a switch that is on or off (0 is off); a bad
value is one line naming the variable and what it accepts (`SettingError`: a usage error, exit 2), found at
start-up (`check_all`, by the command line and by `pytest --tdebug`) before any work, never a silent default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")


class SettingError(ValueError):
    """An environment variable with a value tdebug does not accept: one line for the user (exit 2)."""


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # "choice", "int", "switch", "path"
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    minimum: int = 0
    option: str = ""  # the command-line option that sets the same thing
    internal: bool = False  # set by tdebug for its own child processes

    def parse(self, raw: str | None) -> Any:
        """The value `raw` (None or blank: the default) stands for; SettingError when it stands for none."""
        if raw is None or not raw.strip():
            return self.default
        text = raw.strip()
        if self.kind == "choice":
            if text.lower() in self.choices:
                return text.lower()
            raise SettingError(f"{self.name}={raw!r}: not one of {', '.join(self.choices)}{self._as()}")
        if self.kind == "switch":
            if text.lower() in ON:
                return True
            if text.lower() in OFF:
                return False
            raise SettingError(f"{self.name}={raw!r}: give 1 (on) or 0 (off){self._as()}")
        if self.kind == "int":
            try:
                value = int(text)
            except ValueError:
                value = None
            if value is None or value < self.minimum:
                raise SettingError(f"{self.name}={raw!r}: give a whole number, {self.minimum} or more{self._as()}")
            return value
        return os.path.expanduser(text)  # a path

    def _as(self) -> str:
        return f" (as {self.option})" if self.option else ""

    def accepted(self) -> str:
        """What the variable takes, in words (the list in --help)."""
        if self.kind == "choice":
            return "|".join(self.choices)
        if self.kind == "switch":
            return "1|0"
        if self.kind == "int":
            return f"N>={self.minimum}"
        return "PATH"


SETTINGS: tuple[Setting, ...] = (
    Setting("TDEBUG_EXECUTOR", "choice", "auto", "how the interpreter runs a launch's programs",
            choices=("auto", "batched", "serial"), option="--executor"),
    Setting("TDEBUG_VERBOSE", "switch", False, "say why a launch left the batched engine"),
    Setting("TDEBUG_WORKSPACE", "path", None, "the folder of your copies of the bugs", option="bugs --workspace"),
    Setting("TDEBUG_REPRO_MAX_MIB", "int", 256, "MiB of tensors one reproducer may save (--repro; 0: none)",
            minimum=0),
    Setting("TDEBUG_MEMORY_LIMIT", "int", None, "MiB a worker may allocate (0: no cap; default 3/4 of memory)"),
    Setting("TDEBUG_BATCH_ELEMENTS", "int", 1 << 20, "elements of a batch of programs in the batched engine",
            minimum=1),
    Setting("TDEBUG_REPLAY", "choice", "auto", "a kernel launched again with the same arguments' shapes, strides "
            "and scalars replays its recorded launch: auto (recorded at its second launch, or at the kernel's first), "
            "eager (at its first), off", choices=("auto", "eager", "off")),
    Setting("TDEBUG_LOOP_LANES", "switch", True, "the batched engine runs a loop's iterations as lanes where they "
            "depend on each other only through accumulators"),
    Setting("TDEBUG_KEEP_FREED", "switch", True, "an interpreter worker keeps the heap blocks it frees (glibc) and "
            "gives numpy's arrays small pages"),
    Setting("TDEBUG_SWEEP", "choice", "fork", "a script's autotune runs: forked from one worker, or a fresh one "
            "each", choices=("fork", "spawn")),
    Setting("TDEBUG_COMPUTE_SANITIZER", "path", None, "the compute-sanitizer executable (default: PATH, CUDA_HOME)"),
    Setting("TDEBUG_NO_POISON", "switch", False, "outputs not poisoned (initcheck)", internal=True),
    Setting("TDEBUG_DENSE_RUN_LANES", "int", 1 << 14, "lanes per run of programs below which a batched access "
            "split in runs goes lane by lane (1: dense rows wherever they fit; the fuzzer's small kernels)",
            minimum=1, internal=True),
    Setting("TDEBUG_CASE_MARKERS", "switch", False, "a marker line before each case (compute-sanitizer logs)",
            internal=True),
)
BY_NAME = {s.name: s for s in SETTINGS}
# Not settings: how tdebug talks to the processes it starts (the result pipe, its own pid, a spawned worker's
# sanitizer settings as JSON, the gate a pre-started child waits at); each is written by tdebug just before it
# starts the process that reads it.
PLUMBING = ("TDEBUG_RESULT_FD", "TDEBUG_PARENT_PID", "TDEBUG_FOLLOW", "TDEBUG_GATE")
_PARSED: dict[tuple[str, str | None], Any] = {}  # (name, raw) -> value: executor() is asked at every builtin


_ENVIRON_DATA = getattr(os.environ, "_data", None)  # os.environ's own dict (encoded keys and values), on POSIX
_ENCODED: dict[str, Any] = {}  # a name -> its key there


def get(name: str, environ: Mapping[str, str] | None = None) -> Any:
    """The setting's value now (the environment may change: --executor sets TDEBUG_EXECUTOR for the children).
    Read from os.environ's own dict where it has one (the engine asks at every launch: no key to encode, no value
    to decode until it changes)."""
    if environ is None and _ENVIRON_DATA is not None:
        encoded = _ENCODED.get(name)
        if encoded is None:
            encoded = _ENCODED[name] = os.environ.encodekey(name)
        key = (name, _ENVIRON_DATA.get(encoded))
        found = _PARSED.get(key)
        if found is None and key not in _PARSED:
            raw = None if key[1] is None else os.environ.decodevalue(key[1])
            found = _PARSED[key] = BY_NAME[name].parse(raw)
        return found
    raw = (os.environ if environ is None else environ).get(name)
    key = (name, raw)
    if key not in _PARSED:
        _PARSED[key] = BY_NAME[name].parse(raw)
    return _PARSED[key]


def check_all(environ: Mapping[str, str] | None = None) -> None:
    """SettingError for the first variable with a value tdebug does not accept."""
    for setting in SETTINGS:
        get(setting.name, environ)


def help_text() -> str:
    """The list of variables, for --help (and the README)."""
    lines = ["Environment (a bad value is a usage error):"]
    for s in SETTINGS:
        if not s.internal:
            lines.append(f"  {s.name}={s.accepted()}: {s.help}" + (f" (as {s.option})" if s.option else ""))
    return "\n".join(lines)
