"""Rollouts: the engine protocol and the Hugging Face engine, the vLLM engine, seeded sampling, and the episode source that turns environments into groups."""
