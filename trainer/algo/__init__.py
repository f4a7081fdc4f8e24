"""The RL math: one step (`step.rl_step`), advantages, dynamic sampling, batching, log-probs, the DAPO loss and its aggregations, the update and the learning-rate schedule."""
