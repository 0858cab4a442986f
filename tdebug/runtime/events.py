"""What a child says to its parent over the result pipe (Event, one JSON line each): the only way an event is
made, written (Event.line) and read back (Event.parse)."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


class EventKind(str, enum.Enum):
    READY = "ready"  # tdebug, torch and Triton are imported: from here on the job's --timeout applies
    PLAN = "plan"  # the kernel, the cases' labels, check's lint
    START = "start"  # a case begins (index)
    LAUNCH = "launch"  # a Triton launch begins (kernel, autotune config): a crash is pinned on it
    RESULT = "result"  # a case's outcome (runtime.results.CaseResult's fields)
    DONE = "done"  # every case was reported
    FATAL = "fatal"  # the job could not be done (message; usage: the user's request did not fit)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Event:
    kind: EventKind
    data: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", EventKind(self.kind))  # ValueError for an event no one reads
        if "event" in self.data:
            raise ValueError("an event's data has no key 'event' (its kind says it)")
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))

    def line(self) -> str:
        """The event as the one JSON line the child writes."""
        return json.dumps({"event": self.kind.value, **self.data}, default=str) + "\n"

    @classmethod
    def parse(cls, line: bytes | str) -> Event:
        data = json.loads(line)
        return cls(EventKind(data.pop("event")), data)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.data[key]
