"""The interpreter sanitizer's check names, apart from its machinery (numpy, torch), so the command line can
offer them without importing either."""

CHECKS = frozenset({"bounds", "uninit", "race", "unwritten", "assert", "overflow", "nan"})
# Not in the default set: chosen by name only. overflow-all: every int32 add/sub/mul that wraps is a finding
# (the default reports a wrap only where it reaches an address or a store).
OPTIONAL = frozenset({"overflow-all"})
CHOICES = CHECKS | OPTIONAL
