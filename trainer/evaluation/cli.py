"""``verimath eval``: sample k responses per problem, verify them, report avg@k, pass@k, maj@k.

    verimath eval --model runs/tiny-20261130 --data verimath/Arithmetic-v0 --preset greedy
    verimath eval --model ./Qwen2.5-Math-7B --data aime24.jsonl --preset aime-avg32 \\
        --max-new-tokens 8192 --engine vllm --output results/aime24

Presets set ``k``, temperature and top-p; explicit options override them. Model, problems
and options are checked before anything is written (exit code 2 with a message naming the
option); a rerun with the same options resumes (``eval_run``); Ctrl-C exits with 130.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

PRESETS = {
    "aime-avg32": {"k": 32, "temperature": 1.0, "top_p": 0.7, "greedy": False},
    "greedy": {"k": 1, "temperature": 1.0, "top_p": 1.0, "greedy": True},
    "lighteval-like": {"k": 16, "temperature": 0.6, "top_p": 0.95, "greedy": False},
}
"""``aime-avg32``: the DAPO paper's AIME protocol (avg@32, T=1.0, top-p 0.7). ``greedy``:
pass@1 of one argmax response. ``lighteval-like``: T=0.6, top-p 0.95, 16 samples."""
DEFAULT_MAX_NEW_TOKENS = 2048


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from verimath.rewards.equality.equivalence import MODES
    from verimath.rewards.extraction.final_answer import STYLES
    from verimath.trainer.config.choices import CONVENTION_NAMES, ENGINES

    a = parser.add_argument
    a("--model", required=True, metavar="DIR",
      help="a Hugging Face model directory, a training run, or a checkpoint directory")
    a("--data", required=True, metavar="FILE_OR_ENV_ID",
      help="a problems file from `verimath prep`, or a procedural env id "
           "(verimath/Arithmetic-v0, ...)")
    a("--preset", choices=sorted(PRESETS), default="aime-avg32",
      help="sampling protocol (default aime-avg32: k=32, T=1.0, top-p 0.7)")
    a("--k", type=int, default=None, help="samples per problem (overrides the preset)")
    a("--temperature", type=float, default=None)
    a("--top-p", type=float, default=None)
    a("--max-new-tokens", type=int, default=None,
      help=f"response length cap (default: the run's rollout.max_new_tokens, else "
           f"{DEFAULT_MAX_NEW_TOKENS})")
    a("--engine", choices=ENGINES, default="hf")
    a("--answer-style", choices=STYLES, default=None,
      help="how the final answer is found (default: the run's, else auto)")
    a("--mode", choices=MODES, default=None,
      help="answer equivalence (default: the run's, else symbolic)")
    a("--conventions", choices=CONVENTION_NAMES, default=None,
      help="grading conventions, see docs/conventions.md (default: the run's "
           "reward.conventions, else default)")
    a("--template", default=None,
      help="prompt template: dapo, boxed, raw or a string with {prompt} (default: the run's, "
           "else dapo)")
    a("--chat-template", action=argparse.BooleanOptionalAction, default=None,
      help="wrap prompts with the tokenizer's chat template (default: the run's, else on)")
    a("--timeout", type=float, default=None, help="seconds to verify one answer (default 5)")
    a("--num-problems", type=int, default=None,
      help="problems drawn from an env id (default: the run's eval.num_problems, else 200), "
           "or the first N of a file")
    a("--level", type=int, default=None, help="difficulty of an env id, 1..5")
    a("--problem-seed", type=int, default=None,
      help="problem stream of an env id (default: the run's held-out eval.seed, else 12345)")
    a("--seed", type=int, default=None,
      help="sampling seed (default: the run's eval.seed, as the trainer's held-out evaluation "
           "samples with, else 0)")
    a("--batch-size", type=int, default=256, help="sequences per generation call")
    a("--output", default=None, metavar="DIR",
      help="output directory (default: eval/<checkpoint>-<data>-<preset> inside the training "
           "run, else eval_results/<model>-<data>-<preset>)")
    a("--device", default="auto", help="auto, cpu, cuda or cuda:N (hf engine)")
    a("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    a("--tensor-parallel-size", type=int, default=1, help="GPUs per model (vllm engine)")
    a("--gpu-memory-utilization", type=float, default=0.9, help="vllm engine")
    a("--no-progress", action="store_true", help="no progress bar")


def _sampling(args) -> dict:
    """k, temperature, top-p and greedy from the preset and explicit options."""
    s = dict(PRESETS[args.preset])
    if s["greedy"]:
        if args.temperature is not None or args.top_p is not None:
            raise ValueError("--preset greedy takes no --temperature or --top-p")
        if args.k not in (None, 1):
            raise ValueError(f"--preset greedy samples one argmax response: --k must be 1, "
                             f"got {args.k}")
    for key in ("k", "temperature", "top_p"):
        if getattr(args, key) is not None:
            s[key] = getattr(args, key)
    if s["k"] < 1:
        raise ValueError(f"--k must be >= 1, got {s['k']}")
    if s["temperature"] <= 0:
        raise ValueError(f"--temperature must be > 0 (use --preset greedy for argmax), "
                         f"got {s['temperature']}")
    if not 0 < s["top_p"] <= 1:
        raise ValueError(f"--top-p must be in (0, 1], got {s['top_p']}")
    return s


def _check_numbers(args) -> None:
    for name, low in (("batch_size", 1), ("max_new_tokens", 1), ("num_problems", 1),
                      ("tensor_parallel_size", 1)):
        value = getattr(args, name)
        if value is not None and value < low:
            raise ValueError(f"--{name.replace('_', '-')} must be >= {low}, got {value}")
    if args.timeout is not None:
        from verimath.rewards.equality.equivalence import check_timeout

        try:
            check_timeout(args.timeout)
        except ValueError as e:
            raise ValueError(f"--timeout: {e}") from None
    if not 0 < args.gpu_memory_utilization <= 1:
        raise ValueError(f"--gpu-memory-utilization must be in (0, 1], got "
                         f"{args.gpu_memory_utilization}")


def build_settings(args):
    """``(settings, source, problems)`` from the command line; raises ValueError."""
    from verimath.envs.templates import TEMPLATES
    from verimath.trainer.evaluation.inputs import load_problems, make_data_spec, resolve_model
    from verimath.trainer.evaluation.run import EvalSettings
    from verimath.trainer.model.policy import resolve_device

    _check_numbers(args)
    sampling = _sampling(args)
    source = resolve_model(args.model)
    spec = make_data_spec(args.data, source, num_problems=args.num_problems, level=args.level,
                          problem_seed=args.problem_seed)
    template = args.template or source.setting("model", "prompt_template", "dapo")
    if template not in TEMPLATES and "{prompt}" not in template:
        raise ValueError(f"--template must be one of {sorted(TEMPLATES)} or contain {{prompt}}, "
                         f"got {template!r:.60}")
    try:
        _, dtype = resolve_device(args.device, args.dtype)
    except ValueError as exc:
        raise ValueError(f"--device/--dtype: {exc}") from None
    problems = load_problems(spec)
    settings = EvalSettings(
        model=str(source.model_dir.resolve()), data=spec.data, level=spec.level,
        problem_seed=spec.problem_seed, num_problems=len(problems), k=sampling["k"],
        greedy=sampling["greedy"], temperature=sampling["temperature"],
        top_p=sampling["top_p"],
        max_new_tokens=args.max_new_tokens or source.setting(
            "rollout", "max_new_tokens", DEFAULT_MAX_NEW_TOKENS),
        template=template,
        use_chat_template=(args.chat_template if args.chat_template is not None
                           else source.setting("model", "use_chat_template", True)),
        answer_style=args.answer_style or source.setting("reward", "answer_style", "auto"),
        mode=args.mode or source.setting("reward", "mode", "symbolic"),
        timeout=args.timeout or source.setting("reward", "timeout", 5.0),
        seed=args.seed if args.seed is not None else source.setting("eval", "seed", 0),
        engine=args.engine, dtype=str(dtype).removeprefix("torch."),
        conventions=args.conventions or source.setting("reward", "conventions", "default"))
    return settings, source, problems


OPTION_TAGS = (("k", "k"), ("temperature", "t"), ("top_p", "p"), ("max_new_tokens", "len"),
               ("num_problems", "n"), ("level", "L"), ("problem_seed", "ps"), ("seed", "seed"),
               ("answer_style", "style-"), ("mode", "mode-"), ("timeout", "timeout"),
               ("conventions", "conv-"))
"""Options that change what is sampled or how it is scored, and their tags in a default
output folder's name."""


def option_tags(args) -> list[str]:
    """A tag for each such option given on the command line (``k4``, ``t0.6``, ``vllm``...),
    so that an evaluation with other settings gets a folder of its own."""
    tags = [f"{tag}{getattr(args, name)}" for name, tag in OPTION_TAGS
            if getattr(args, name) is not None]
    if args.template is not None:
        digest = hashlib.sha1(args.template.encode()).hexdigest()[:6]
        tags.append(f"tpl-{args.template}" if args.template.isidentifier() else f"tpl-{digest}")
    if args.chat_template is not None:
        tags.append("chat" if args.chat_template else "nochat")
    if args.engine != "hf":
        tags.append(args.engine)
    return tags


def default_output(source, args) -> Path:
    """Where results go without ``--output``: inside the training run the model comes from
    (``<run>/eval/<checkpoint>-<data>-<preset>[-<options>]``), else
    ``eval_results/<model>-<data>-<preset>[-<options>]`` in the working directory (a model
    directory may be shared or read-only). Options that override the preset or the run's
    settings are part of the name (:func:`option_tags`): the same command resumes its own
    folder, another command writes another one."""
    data = Path(args.data).stem if Path(args.data).suffix else args.data.split("/")[-1]
    name = "-".join([data, args.preset, *option_tags(args)])
    if source.checkpoint is not None:
        return source.checkpoint.parent.parent / "eval" / f"{source.checkpoint.name}-{name}"
    return Path("eval_results") / f"{source.model_dir.name}-{name}"


def check_eval_context(settings, problems) -> None:
    """ValueError, naming the numbers, when the longest prompt plus ``--max-new-tokens``
    exceeds the model's ``max_position_embeddings`` (read from its config.json)."""
    from verimath.trainer.model.policy import load_tokenizer
    from verimath.trainer.rollout.context_length import context_error, longest_prompt

    try:
        config = json.loads((Path(settings.model) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # loading the model reports it
    positions = config.get("max_position_embeddings") if isinstance(config, dict) else None
    if not isinstance(positions, int):
        return
    tokens, problem = longest_prompt(load_tokenizer(settings.model), problems,
                                     template=settings.template,
                                     use_chat_template=settings.use_chat_template)
    message = context_error(prompt_tokens=tokens, max_new_tokens=settings.max_new_tokens,
                            positions=positions, new_tokens_name="--max-new-tokens",
                            what=f"the longest prompt ({problem.id if problem else '?'})")
    if message:
        raise ValueError(message)


def make_engine(args, settings):
    """``(engine, tokenizer)`` for ``settings.model``; raises ValueError."""
    import torch
    from verimath.trainer.model.policy import (
        is_adapter_dir,
        load_pretrained,
        load_tokenizer,
        resolve_device,
    )

    model_dir = Path(settings.model)
    if args.engine == "vllm":
        if is_adapter_dir(model_dir):
            raise ValueError(f"--model {model_dir} is a LoRA adapter (a checkpoint before its "
                             "run's last step holds only adapter/): --engine vllm loads full "
                             "model directories; use --engine hf, which merges the adapter into "
                             "its base, or the run's last checkpoint (its model/ is merged)")
        tokenizer = load_tokenizer(model_dir)
        try:  # the module, or vllm inside it, may be missing
            from verimath.trainer.rollout.vllm_engine import VLLMRolloutEngine

            engine = VLLMRolloutEngine(
                str(model_dir), tokenizer, seed=settings.seed, dtype=settings.dtype,
                gpu_memory_utilization=args.gpu_memory_utilization,
                tensor_parallel_size=args.tensor_parallel_size, enable_sleep_mode=False,
                max_model_len=None, enforce_eager=False)
        except ImportError as exc:
            raise ValueError(f"--engine vllm needs vLLM ({exc}): pip install 'verimath[vllm]'"
                             ) from None
        return engine, tokenizer
    from verimath.trainer.rollout.hf_engine import HFRolloutEngine

    device, _ = resolve_device(args.device, args.dtype)
    try:
        model, tokenizer = load_pretrained(model_dir, dtype=getattr(torch, settings.dtype))
    except OSError as exc:  # missing weights or tokenizer files
        raise ValueError(f"--model {model_dir}: cannot load it ({exc})") from None
    return HFRolloutEngine(model.to(device), tokenizer, batch_size=args.batch_size), tokenizer


def main(args: argparse.Namespace) -> int:
    from verimath.trainer.evaluation.run import check_output_dir

    try:
        settings, source, problems = build_settings(args)
        output = Path(args.output) if args.output else default_output(source, args)
        check_eval_context(settings, problems)
        resumed = check_output_dir(output, settings)
        engine, tokenizer = make_engine(args, settings)
    except (ValueError, FileNotFoundError) as exc:
        print(f"verimath eval: error: {exc}", file=sys.stderr)
        return 2
    where = f" (checkpoint {source.checkpoint})" if source.checkpoint else ""
    print(f"verimath eval: {len(problems)} problems x {settings.k} samples, model "
          f"{settings.model}{where}, output {output}" + (" (resuming)" if resumed else ""),
          file=sys.stderr)
    try:
        summary = run_and_report(engine, tokenizer, problems, settings, output,
                                 batch_size=args.batch_size, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"\nverimath eval: interrupted; finished problems are in {output}; rerun the "
              "same command to resume", file=sys.stderr)
        return 130
    finally:
        engine.close()
    print(summary["table"], end="")
    return 0


def run_and_report(engine, tokenizer, problems, settings, output: Path, *, batch_size: int,
                   progress: bool = True) -> dict:
    """Sample what is missing, then write summary.json and results.md; returns the summary
    (with its markdown ``table``)."""
    from tqdm.auto import tqdm
    from verimath.trainer.evaluation.report import markdown_table, summarize
    from verimath.trainer.evaluation.run import (
        SAMPLES,
        SETTINGS,
        SUMMARY,
        TABLE,
        SampleStore,
        sample_and_verify,
    )

    output.mkdir(parents=True, exist_ok=True)
    (output / SETTINGS).write_text(json.dumps(settings.to_dict(), indent=2) + "\n")
    with SampleStore(output / SAMPLES, k=settings.k, problems=problems) as store, \
            tqdm(total=len(problems), initial=len(store.done), desc="eval", unit="problem",
                 disable=None if progress else True) as bar:
        def advance(count: int) -> None:
            bar.update(count)
            bar.set_postfix(acc=f"{store.accuracy:.3f}")

        sample_and_verify(engine, tokenizer, problems, settings, store,
                          batch_size=batch_size, on_chunk=advance)
        records = list(store.records)
    summary = {"settings": settings.to_dict(),
               **summarize(records, mode=settings.mode, conventions=settings.conventions)}
    (output / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
    table = markdown_table(summary)
    (output / TABLE).write_text(table)
    return {**summary, "table": table}
