"""Rollouts: the Hugging Face and vLLM engines, seeded sampling, the episode sources that turn
environments into groups (in process, or one step ahead in a generator process), where the
generator runs, and whether prompts fit the model's context."""
