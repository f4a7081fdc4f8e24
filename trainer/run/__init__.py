"""A training run's lifecycle: its state, the loop, data-parallel ranks, metrics and the progress bar."""
