"""`tdebug check` as functions: a catalogue file against its float64 reference over the adversarial case
matrix (against_reference.py), and the autotune lint that runs before any launch (lint.py). The comparison itself
lives in catalogue/compare.py, since the runtime judges every case it runs."""

from .against_reference import check_file

__all__ = ["check_file"]
