"""`rla ablate`: the arms of issue 9 run with shared settings and an equal environment-step
budget under one group, resumable, and summarised as a table (arms, execute, results)."""
