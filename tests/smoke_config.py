"""The smoke runs' config overrides, shared by the trainer tests that run a few real steps."""

# A model of ~20K parameters on one-digit arithmetic: the warm start teaches "Answer: d",
# the digits are then right by chance often enough to give informative groups.
SMOKE = [
    "model.tiny_hidden_size=32", "model.tiny_layers=1", "model.tiny_heads=2",
    "data.level=1", "warmstart.steps=150",
    "warmstart.target_accuracy=null", "warmstart.noise_after=0",  # a fixed-length warm start
    "warmstart.lr=1e-2", "warmstart.batch_size=32",
    "rollout.gen_prompts=8", "rollout.group_size=8", "rollout.max_new_tokens=12",
    "algo.train_prompts=4", "algo.mini_batch_prompts=2", "algo.micro_batch_size=5",
    "algo.max_gen_rounds=4", "optim.lr=1e-2", "optim.warmup_steps=0",
    "eval.num_problems=12", "eval.k=2", "logging.progress=false", "logging.save_every=1",
    "logging.plot=true", "model.threads=0",  # leave torch's thread count alone in tests
    "algo.kl_coef=0.05",  # the optional KL to the RL-start model, so resume must restore it
    "algo.logprob_chunk_size=7",  # the memory-bounded policy forward, several chunks
    "reward.workers=1",  # sizes the shared scoring pool (the default here would be 2)
    "logging.backends=[jsonl,tensorboard]",  # event files beside metrics.jsonl
]
