"""The trainer's floor: small pieces every other sub-package may use, importing none of them.

``distributed`` (torchrun ranks, FSDP2 and the few collectives), ``processes`` (one live
process per run directory, children that die with their launcher), ``logprobs`` (the one
log-prob and entropy kernel), ``groups`` (the scored groups dynamic sampling keeps or drops),
``protocols`` (what a rollout engine and an episode source do) and ``state`` (the typed run
state, ``TrainState``). Only ``verimath.trainer.config`` lies below it.
"""
