"""The Hugging Face rollout engine: sampling with ``transformers`` ``generate``.

Engines follow ``verimath.trainer.core.protocols.RolloutEngine``: token ids in, token ids
out, so they are interchangeable (this one, vLLM in ``vllm_engine``): the trainer builds
prompt ids (chat template included), asks an engine for ``n`` samples of each, and gets a
``Rollouts`` back::

    with HFRolloutEngine(model, tokenizer) as engine:
        out = engine.generate(prompt_ids, SamplingParams(temperature=1.0, max_new_tokens=16), n=8)
        out.response_ids[0], out.truncated[0], out.texts[0]

Conventions: ``response_ids[i]`` ends with the EOS id when the response finished, and has
exactly ``max_new_tokens`` ids without EOS when it was cut off (``truncated[i]`` True). The
EOS token is part of the response (the policy is trained to emit it). Sample ``i`` belongs to
prompt ``i // n``. The old log-probs DAPO needs come from the trainer's own forward pass
(``verimath.trainer.core.logprobs.token_logprobs``), not from the engine.
"""

from __future__ import annotations

import numpy as np
from verimath.trainer.core.protocols import Rollouts, SamplingParams, WeightSync


class HFRolloutEngine:
    """Sampling with ``transformers`` ``generate`` on the policy itself (weights shared).

    Prompts are left-padded into batches of at most ``batch_size`` sequences (prompt
    copies included). Sampling draws from torch's global RNG, which the trainer seeds and
    checkpoints; with ``seeds`` (one per prompt) each sample draws from its own RNG instead
    (``verimath.trainer.rollout.seeded_sampling``), the same whatever the batching.
    """

    def __init__(self, model, tokenizer, *, batch_size: int = 512) -> None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no eos_token_id; responses could never finish")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, int(batch_size)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None \
            else tokenizer.eos_token_id
        self.eos_ids = _eos_ids(model, tokenizer)
        self.closed = False

    def generate(self, prompt_ids, params: SamplingParams, *, n: int = 1,
                 seeds: list[int] | None = None) -> Rollouts:
        if self.closed:
            raise RuntimeError("HFRolloutEngine is closed")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if seeds is not None and len(seeds) != len(prompt_ids):
            raise ValueError(f"{len(seeds)} seeds for {len(prompt_ids)} prompts")
        expanded = [list(p) for p in prompt_ids for _ in range(n)]
        rows = None if seeds is None else [(s, j) for s in seeds for j in range(n)]
        responses: list[list[int]] = []
        logprobs: list[np.ndarray] = []
        for start in range(0, len(expanded), self.batch_size):
            end = start + self.batch_size
            batch, batch_logprobs = self._generate_batch(
                expanded[start:end], params, None if rows is None else rows[start:end])
            responses += batch
            logprobs += batch_logprobs
        truncated = np.array(
            [len(r) >= params.max_new_tokens and r[-1] not in self.eos_ids for r in responses],
            dtype=bool,
        )
        texts = self.tokenizer.batch_decode(responses, skip_special_tokens=True)
        return Rollouts(expanded, responses, texts, truncated, logprobs)

    def _generate_batch(self, prompts: list[list[int]], params: SamplingParams,
                        row_seeds=None) -> tuple[list[list[int]], list[np.ndarray]]:
        import torch

        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):  # left padding
            ids[i, width - len(p):] = torch.tensor(p, dtype=torch.long)
            attention[i, width - len(p):] = 1
        recorder = _SampledTokenLogprobs(params)  # first processor: sees the model's logits
        processors = [recorder]
        sample = {} if params.greedy else {  # top_k=0: no top-k cut (transformers' default 50)
            "temperature": params.temperature, "top_p": params.top_p, "top_k": 0}
        if row_seeds is not None and not params.greedy:  # argmax of one-hot seeded draws
            from verimath.trainer.rollout.seeded_sampling import SeededSampler

            sample = {}
            processors.append(SeededSampler(
                row_seeds, temperature=params.temperature, top_p=params.top_p))
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                out = self.model.generate(
                    input_ids=ids.to(device), attention_mask=attention.to(device),
                    do_sample=not params.greedy and row_seeds is None,
                    max_new_tokens=params.max_new_tokens,
                    pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids),
                    repetition_penalty=1.0,  # a model's generation_config may set one
                    logits_processor=processors, **sample,
                )
        finally:
            self.model.train(was_training)
        generated = out[:, width:]  # (B, T)
        step_logprobs = recorder.result(generated).cpu().numpy()  # (B, T)
        rows = [_cut_at_eos(row, self.eos_ids) for row in generated.tolist()]
        return rows, [step_logprobs[i, :len(r)].copy() for i, r in enumerate(rows)]

    def sync_weights(self, model) -> WeightSync:
        self.model = model  # generate() runs on the policy itself: nothing to push
        return WeightSync()

    def close(self) -> None:
        self.closed = True
        self.model = None

    def __enter__(self) -> HFRolloutEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def eos_token_ids(tokenizer, generation_config=None) -> set[int]:
    """Ids that end a response: the tokenizer's EOS and any ``eos_token_id`` (an int or a
    list) of the model's generation config (e.g. Qwen's ``<|im_end|>`` and
    ``<|endoftext|>``)."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    return ids


def _eos_ids(model, tokenizer) -> set[int]:
    return eos_token_ids(tokenizer, getattr(model, "generation_config", None))


def sampling_logits(logits, params: SamplingParams):
    """The logits a token is drawn from under ``params``: ``(..., V) -> (..., V)`` float32.

    Greedy: ``logits`` unchanged. Otherwise ``logits / T`` with the tokens outside the top-p
    nucleus set to ``-inf``: sorted by probability, a token is dropped when the probability
    of the tokens less likely than it and itself adds up to at most ``1 - top_p`` (the most
    likely token always stays), the rule of ``transformers``' ``TopPLogitsWarper`` and of
    vLLM's sampler. ``log_softmax`` of the result is the behaviour log-prob.
    """
    z = logits.float()
    if params.greedy:
        return z
    z = z / params.temperature
    if params.top_p >= 1:
        return z
    ascending, order = z.sort(dim=-1)  # (..., V)
    drop = ascending.softmax(dim=-1).cumsum(dim=-1) <= 1 - params.top_p  # (..., V)
    drop[..., -1] = False
    return z.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


class _SampledTokenLogprobs:
    """A ``generate`` logits processor that records behaviour log-probs, scores unchanged.

    Called once per generated position with that position's logits; the token drawn from
    them is known at the next call (the last column of ``input_ids``) or, for the last
    position, from the returned sequences (:meth:`result`). Holds one ``(B, V)`` tensor.
    """

    def __init__(self, params: SamplingParams) -> None:
        self.params = params
        self.pending = None  # (B, V) sampling logits whose token is not known yet
        self.steps: list = []  # (B,) log-probs per generated position

    def __call__(self, input_ids, scores):
        if self.pending is not None:
            self.steps.append(self._score(input_ids[:, -1]))
        self.pending = sampling_logits(scores, self.params)
        return scores

    def result(self, generated):
        """``(B, T)`` log-probs of ``generated`` ``(B, T)``, the ids after the prompt."""
        import torch

        steps = list(self.steps)
        if self.pending is not None:
            steps.append(self._score(generated[:, -1]))
        if not steps:
            return torch.zeros(generated.shape, dtype=torch.float32)
        return torch.stack(steps, dim=1)  # (B, T)

    def _score(self, tokens):
        from verimath.trainer.core.logprobs import logprobs_from_logits

        return logprobs_from_logits(self.pending, tokens.to(self.pending.device))  # (B,)


def _cut_at_eos(row: list[int], eos_ids: set[int]) -> list[int]:
    for j, token in enumerate(row):
        if token in eos_ids:
            return row[: j + 1]
    return row
