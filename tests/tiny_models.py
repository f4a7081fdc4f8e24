"""Small models for evaluation tests, trained in a few seconds on the CPU.

``fit_seven_or_eight`` teaches the tiny character model to answer any "What is a + b?"
prompt with "Answer: 7" or "Answer: 8", each about half the time, so that sampled
evaluations have accuracies strictly between 0 and 1 on problems whose gold is 7 or 8.
"""

from __future__ import annotations

from pathlib import Path

from verimath.envs import Problem, write_problems

TEMPLATE = "{prompt}\n"


def prompt_text(index: int) -> str:
    return f"What is {index % 5} + {index // 5}?"


def fit_seven_or_eight(folder: Path, *, steps: int = 30):
    """Train, save as a Hugging Face directory at ``folder`` and return ``(model, tokenizer)``."""
    import torch
    from verimath.trainer.tiny import make_char_tokenizer, make_tiny_model

    tokenizer = make_char_tokenizer()
    model = make_tiny_model(tokenizer, hidden_size=32, num_layers=1, num_heads=2, seed=0)
    prompts = [tokenizer(TEMPLATE.format(prompt=prompt_text(i)))["input_ids"] for i in range(16)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small trains fastest on one thread
    try:
        _fit(model, tokenizer, prompts, optimizer, steps)
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def _fit(model, tokenizer, prompts, optimizer, steps: int) -> None:
    import torch

    for step in range(steps):
        targets = [tokenizer(f"Answer: {7 + (i + step) % 2}")["input_ids"]
                   + [tokenizer.eos_token_id] for i in range(len(prompts))]
        ids, attention, mask = _pack(prompts, targets, pad_id=tokenizer.pad_token_id)
        logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]  # (B, S-1, V)
        logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -(logp * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def _pack(prompts, targets, *, pad_id: int):
    """Right-padded ``prompt + target`` ids, attention mask, and the mask of target positions
    among the next-token predictions ``(B, S - 1)``."""
    import torch

    width = max(len(p) + len(t) for p, t in zip(prompts, targets))
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)  # (B, S)
    attention = torch.zeros_like(ids)
    mask = torch.zeros((len(prompts), width - 1))  # (B, S - 1)
    for i, (p, t) in enumerate(zip(prompts, targets)):
        ids[i, :len(p) + len(t)] = torch.tensor(p + t)
        attention[i, :len(p) + len(t)] = 1
        mask[i, len(p) - 1:len(p) + len(t) - 1] = 1.0
    return ids, attention, mask


def seven_or_eight_problems(path: Path, count: int = 20) -> list[Problem]:
    """``count`` problems, golds alternating 7 and 8, sources ``a`` (even) and ``b`` (odd)."""
    problems = [Problem(id=f"t/{i}", prompt=prompt_text(i), answer=str(7 + i % 2),
                        source="ab"[i % 2], meta={}) for i in range(count)]
    write_problems(problems, path)
    return problems
