"""The sections of :class:`verimath.trainer.config.TrainConfig`, one module per pair of
sections (import them from ``verimath.trainer.config``): ``model`` (model, data), ``rollout``
(rollout, reward), ``algo``, ``optim`` (optim, warmstart), ``run`` (eval, logging).
Every field has its docstring right under it (``verimath train --print-config`` shows them)."""
