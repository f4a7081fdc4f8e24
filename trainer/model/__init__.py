"""The policy model: loading a model directory or building the tiny one, the tokenizer, and the supervised warm start."""
