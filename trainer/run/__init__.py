"""The loop's layer: what drives a ``TrainState``.

The RL step (``step.rl_step`` and its metrics), how a run is built (``setup.open_state``), the
loop around the step (``loop``: evaluation cadence, checkpoints, summary), saving and
restoring the run state (``checkpoints``), held-out evaluation during training (``heldout``),
the learning-signal watch (``learning_signal``), metrics and the progress bar, launching
ranks (``launch``), and the ``verimath train`` and ``verimath plot`` commands (``cli``,
``plot_cli``).
"""
