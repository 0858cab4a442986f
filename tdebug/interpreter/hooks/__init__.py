"""The checks' hooks in the interpreter: the memory events and their listeners' helpers, the bounds guard, pointer
provenance, store records, integer overflow, breakpoints and size caps."""
