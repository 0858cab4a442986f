"""The bugs/ catalogue as exercises: metadata, the user's workspace, hints and solutions (workspace.py),
the detectors run on a bug (detectors.py, probe.py), judging the user's fix (judge.py) and the detection
matrix of every bug against every detector (matrix.py)."""
