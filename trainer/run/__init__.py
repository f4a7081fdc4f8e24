"""A training run's lifecycle: its state (`state`), how it is built (`setup`), the loop (`loop`), data-parallel ranks (`distributed`), metrics and the progress bar."""
