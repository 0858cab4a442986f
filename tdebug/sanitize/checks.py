"""The interpreter sanitizer's check names, apart from its machinery (numpy, torch), so the command line can
offer them without importing either."""

CHECKS = frozenset({"bounds", "uninit", "race", "unwritten", "assert", "overflow", "nan"})
