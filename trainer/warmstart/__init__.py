"""The supervised warm start before RL: teach the answer format on procedural problems.

``supervised`` builds the pairs and trains on them (``warmstart``); ``stopping`` decides when
to stop (a probe set's accuracy against a target, bracketed so that seeds start RL at about
the same accuracy).
"""
