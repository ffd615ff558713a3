"""`rla ablate`: an ablation's arms (arms.py) run with shared settings and an equal environment-step
budget under one group, resumable, and summarised as a table (arms, execute, results)."""
