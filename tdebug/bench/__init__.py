"""`tdebug bench`: GPU timing against a strong baseline (medians with their spread, measured peaks) and
the report that holds each kernel to its target."""
