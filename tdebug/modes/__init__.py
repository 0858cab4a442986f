"""How a launch runs: the CPU interpreter (with tdebug's patches), the GPU in debug mode, compute-sanitizer."""
