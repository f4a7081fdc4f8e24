"""The scoring pool: symbolic verdicts in worker processes under a hard wall-clock timeout.

``scoring_pool`` is the parent side (:class:`ScoringPool`: the zygote, forking and killing
workers, scheduling, timeouts, the verdict cache, the process-wide default pool); ``worker``
the child side (the zygote and the workers it forks), which runs in processes of its own.
"""

from verimath.rewards.pool.scoring_pool import ScoringPool, configure_default_pool, default_pool

__all__ = ["ScoringPool", "configure_default_pool", "default_pool"]
