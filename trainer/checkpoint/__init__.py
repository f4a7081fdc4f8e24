"""Checkpoints: atomic files on disk (`files`), a run's full state in them (`run_state`), and sharded multi-rank checkpoints (`sharded`)."""
