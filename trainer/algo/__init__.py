"""The RL math, pure functions on tensors and arrays: advantages, dynamic sampling, batching,
the policy losses and their aggregations (registries by name), the update on a mini-batch and
the learning-rate schedule. The step that calls them is ``verimath.trainer.run.step``."""
