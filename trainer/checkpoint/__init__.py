"""Checkpoints: atomic files on disk (``files``), their names and search (``layout``), the RNG
states they keep (``rng``) and sharded multi-rank checkpoints (``sharded``). What a run saves in
them is ``verimath.trainer.run.checkpoints``."""
