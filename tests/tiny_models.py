"""Small models for evaluation tests, built in code with outputs fixed by construction.

``fit_seven_or_eight`` builds a character model that answers any prompt ending in a newline
with exactly "Answer: 7" or "Answer: 8" (then EOS), each with probability 1/2, so that
sampled evaluations have accuracies strictly between 0 and 1 on problems whose gold is 7
or 8. Its weights are set, not trained: what it writes does not depend on how well a tiny
model happens to fit with a given torch or transformers version.
"""

from __future__ import annotations

from pathlib import Path

from verimath.envs import Problem, write_problems

TEMPLATE = "{prompt}\n"


def prompt_text(index: int) -> str:
    return f"What is {index % 5} + {index // 5}?"


SEVEN_OR_EIGHT = ("\n", "A", "n", "s", "w", "e", "r", ":", " ")  # each character's successor
# is the next one; a space is followed by "7" or "8", and both of those by EOS.


def fit_seven_or_eight(folder: Path):
    """Build, save as a Hugging Face directory at ``folder`` and return ``(model, tokenizer)``.

    A bigram model in Qwen2 form: one-hot input embeddings, one decoder layer whose
    attention and MLP outputs are zero (so the residual stream is the current token's
    embedding), and an output matrix that is the log-probability table of the next
    character. Every character outside the answer line is followed by EOS.
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from verimath.trainer.model.tiny import make_char_tokenizer

    tokenizer = make_char_tokenizer()
    vocab = len(tokenizer)
    hidden = vocab + (vocab % 2)  # one dimension per token, even for two heads
    config = Qwen2Config(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=8, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
        tie_word_embeddings=False, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, bos_token_id=None, use_cache=True,
    )
    model = Qwen2ForCausalLM(config)
    ids = {c: tokenizer.convert_tokens_to_ids(c) for c in (*SEVEN_OR_EIGHT, "7", "8")}
    table = torch.full((vocab, vocab), -40.0)  # (next, current) log-probabilities, up to a shift
    table[tokenizer.eos_token_id, :] = 0.0  # anything else ends the response
    for current, following in zip(SEVEN_OR_EIGHT, SEVEN_OR_EIGHT[1:] + ("7",)):
        table[:, ids[current]] = -40.0
        table[ids[following], ids[current]] = 0.0
    table[ids["8"], ids[" "]] = 0.0  # "7" and "8" equally likely after the space
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
        model.model.embed_tokens.weight[:, :vocab] = torch.eye(vocab)
        model.model.norm.weight.fill_(1.0)
        for layer in model.model.layers:  # zero outputs: the layer adds nothing to the stream
            layer.input_layernorm.weight.fill_(1.0)
            layer.post_attention_layernorm.weight.fill_(1.0)
        # RMS-normalising a one-hot vector of width `hidden` multiplies it by sqrt(hidden)
        model.lm_head.weight[:, :vocab] = table / hidden**0.5
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def seven_or_eight_problems(path: Path, count: int = 20) -> list[Problem]:
    """``count`` problems, golds alternating 7 and 8, sources ``a`` (even) and ``b`` (odd)."""
    problems = [Problem(id=f"t/{i}", prompt=prompt_text(i), answer=str(7 + i % 2),
                        source="ab"[i % 2], meta={}) for i in range(count)]
    write_problems(problems, path)
    return problems
