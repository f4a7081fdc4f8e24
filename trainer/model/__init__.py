"""The policy model: a model directory or hub id, the tiny CPU model, the tokenizer, LoRA."""
