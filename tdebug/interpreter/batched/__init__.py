"""The batched engine: a launch's grid loop, its Launch, programs run in lock-step with a program axis on every
value, their memory as numpy, predicated loops, and what only the serial engine runs."""
