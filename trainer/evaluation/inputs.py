"""What ``verimath eval`` evaluates: the model directory and the problems.

``--model`` is a Hugging Face model directory, a hub id (``org/name``, resolved through
huggingface_hub's cache: downloaded when online and missing, the cache alone with
``HF_HUB_OFFLINE=1``), a training checkpoint (``step_*``; a LoRA run's checkpoints before the
last step hold only ``adapter/``, evaluated as its base with the adapter merged in), or a
training run directory (its latest checkpoint). A checkpoint's ``model/`` is the model and its
``config.json`` the run's config, which supplies the defaults that make evaluation see
prompts exactly as training did: prompt template, chat template, answer style, equivalence
mode, verifier timeout, response length and, for a procedural task, the held-out stream
(``eval.seed``, ``data.skip_containing``).

``--data`` is a problems file (``verimath prep``) or a procedural env id such as
``verimath/Arithmetic-v0``, from which ``--num-problems`` distinct problems of ``--level``
are drawn. Every error is a ``ValueError`` naming the option and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verimath.envs import Problem, read_problems
from verimath.envs.registration import FAMILY_IDS
from verimath.trainer.checkpoint.files import is_checkpoint, resolve_checkpoint
from verimath.trainer.model.hub import is_hub_id, mistyped_local_path, resolve_model_dir
from verimath.trainer.model.policy import is_adapter_dir

HELDOUT_SEED = 12345
"""Default procedural stream, the trainer's held-out one (``eval.seed``)."""
DEFAULT_NUM_PROBLEMS = 200


@dataclass(frozen=True)
class ModelSource:
    """A model directory and, when it comes from a training run, that run's config."""

    model_dir: Path
    run_config: dict[str, Any] = field(default_factory=dict)
    """The checkpoint's ``config.json`` (a ``TrainConfig`` as a dict); empty for a plain
    Hugging Face directory."""
    checkpoint: Path | None = None

    def setting(self, section: str, key: str, default: Any) -> Any:
        """``run_config[section][key]``, or ``default`` outside a training run."""
        value = self.run_config.get(section, {}).get(key)
        return default if value is None else value


def _is_hf_dir(path: Path) -> bool:
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and ("model_type" in config or "architectures" in config)


def _checkpoint_source(ckpt: Path) -> ModelSource:
    model_dir = ckpt / "model"
    if not _is_hf_dir(model_dir) and is_adapter_dir(ckpt / "adapter"):
        model_dir = ckpt / "adapter"  # a LoRA checkpoint before the last step: base + adapter
    elif not _is_hf_dir(model_dir):
        raise ValueError(f"--model: checkpoint {ckpt} has no Hugging Face model in model/ "
                         "(no config.json); evaluate a checkpoint written by verimath train")
    try:
        config = json.loads((ckpt / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--model: cannot read the run config {ckpt / 'config.json'} "
                         f"({exc}); pass --model {model_dir} with --template instead") from None
    return ModelSource(model_dir, config if isinstance(config, dict) else {}, ckpt)


def resolve_model(path: str) -> ModelSource:
    """The model behind ``--model PATH``; see the module docstring."""
    folder = Path(path)
    if (local := mistyped_local_path(path)) is not None:
        raise ValueError(f"--model {local}")
    if not folder.exists() and is_hub_id(path):  # Qwen/Qwen2.5-Math-7B: huggingface_hub's cache
        return ModelSource(resolve_model_dir(path, field="--model"))
    if not folder.is_dir():
        raise ValueError(f"--model {path}: no such directory (pass a local Hugging Face "
                         "directory, a training run or a hub id such as org/name)")
    if is_checkpoint(folder):
        return _checkpoint_source(folder)
    if _is_hf_dir(folder) or is_adapter_dir(folder):
        if is_checkpoint(folder.parent):  # a checkpoint's model/: keep the run's settings
            return _checkpoint_source(folder.parent)
        return ModelSource(folder)
    try:
        return _checkpoint_source(resolve_checkpoint(folder))
    except FileNotFoundError:
        raise ValueError(f"--model {path}: neither a Hugging Face model directory (no "
                         "config.json with a model_type) nor a training run or checkpoint "
                         "(no checkpoints/step_*)") from None


def family_of(data: str) -> str | None:
    """The generator family of a procedural env id, or None."""
    for family, env_id in FAMILY_IDS.items():
        if data in (env_id, env_id.split("/", 1)[1]):
            return family
    return None


@dataclass(frozen=True)
class DataSpec:
    """Where the problems come from (``family`` set for a procedural env id)."""

    data: str
    family: str | None = None
    level: int | None = None
    problem_seed: int | None = None
    num_problems: int | None = None
    skip_containing: tuple[str, ...] = ()


def make_data_spec(data: str, source: ModelSource, *, num_problems: int | None,
                   level: int | None, problem_seed: int | None) -> DataSpec:
    """Resolve ``--data`` and its procedural options (defaults from the run's config when
    the run trained on the same family). Raises ValueError."""
    family = family_of(data)
    if family is None:
        if not Path(data).is_file():
            known = ", ".join(list(FAMILY_IDS.values())[:3])
            raise ValueError(f"--data {data}: no such file, and not a procedural env id "
                             f"({known}, ...)")
        if level is not None or problem_seed is not None:
            raise ValueError("--level and --problem-seed apply to procedural env ids only")
        return DataSpec(str(Path(data).resolve()), num_problems=num_problems)
    same = source.setting("data", "family", None) == family
    level = level if level is not None else (source.setting("data", "level", 1) if same else 1)
    if not 1 <= level <= 5:
        raise ValueError(f"--level must be in 1..5, got {level}")
    if problem_seed is None:
        problem_seed = source.setting("eval", "seed", HELDOUT_SEED) if same else HELDOUT_SEED
    if num_problems is None:
        num_problems = (source.setting("eval", "num_problems", DEFAULT_NUM_PROBLEMS) if same
                        else DEFAULT_NUM_PROBLEMS) or DEFAULT_NUM_PROBLEMS
    skip = tuple(source.setting("data", "skip_containing", ())) if same else ()
    return DataSpec(FAMILY_IDS[family], family, int(level), int(problem_seed),
                    int(num_problems), skip)


def load_problems(spec: DataSpec) -> list[Problem]:
    """The problems of ``spec``, in order (a file's first ``num_problems`` when given)."""
    from verimath.trainer.rollout.episodes import heldout_problems

    if spec.family is not None:
        problems = heldout_problems(family=spec.family, level=spec.level,
                                    seed=spec.problem_seed, count=spec.num_problems,
                                    skip_containing=spec.skip_containing)
    else:
        problems = read_problems(spec.data)  # ProblemFileError names file, line and field
        if spec.num_problems is not None:
            problems = problems[:spec.num_problems]
    if not problems:
        raise ValueError(f"--data {spec.data}: no problems to evaluate")
    return problems
