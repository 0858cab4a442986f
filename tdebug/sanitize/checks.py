"""The interpreter sanitizer's check names, apart from its machinery (numpy, torch), so the command line can
offer them without importing either."""

CHECKS = frozenset({"bounds", "uninit", "race", "unwritten", "assert", "overflow", "nan"})
# Not in the default set: chosen by name only. overflow-all: every int32 add/sub/mul that wraps is a finding
# (the default reports a wrap only where it reaches an address or a store).
# divergence (a GPU's interpreter pass): a launch that could not be compared compiled makes the run NOT fully
# checked (by default it is a note).
OPTIONAL = frozenset({"overflow-all", "divergence"})
CHOICES = CHECKS | OPTIONAL
