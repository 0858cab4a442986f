"""Shortcuts through Triton's interpreter front end with unchanged results: memoised ops, launches and casts,
reductions and scans at numpy speed."""
