"""Config dataclasses, presets and dotted overrides."""

from __future__ import annotations

import dataclasses
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from verimath.trainer.config import TrainConfig
from verimath.trainer.config.files import (
    apply_overrides,
    config_changes,
    config_from_dict,
    config_to_commented_yaml,
    field_docs,
    is_safe_on_resume,
    load_config,
    parse_override,
    preset_descriptions,
    preset_names,
    read_config_file,
    required_settings,
    save_config,
)


def test_presets_exist_and_load():
    names = preset_names()
    assert {"tiny", "dapo", "grpo"} <= set(names)
    for name in names:
        assert isinstance(load_config(name, check_required=False), TrainConfig)


def test_every_preset_has_a_one_line_purpose():
    purposes = preset_descriptions()
    assert list(purposes) == preset_names()
    for name, purpose in purposes.items():
        assert 20 <= len(purpose) <= 100 and not purpose.startswith("#"), (name, purpose)
    assert "model.path" in purposes["dapo"]


def test_a_preset_for_a_real_model_refuses_to_start_without_one():
    with pytest.raises(ValueError, match=r"preset 'dapo' needs model.path: a Hugging Face "
                                         r"model directory.*verimath train --config dapo "
                                         r"model.path=\.\.\."):
        load_config("dapo")
    assert load_config("dapo", ["model.path=/models/m"]).model.path == "/models/m"
    assert required_settings("dapo") == {"model.path": required_settings("dapo")["model.path"]}
    assert required_settings("tiny") == {}


def test_requires_is_inherited_through_base_and_checked(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_text("__base__: dapo\noptim:\n  steps: 3\n")
    with pytest.raises(ValueError, match="needs model.path"):
        load_config(str(mine))
    own = tmp_path / "own.yaml"
    own.write_text("__requires__: [data.train_file]\n")
    with pytest.raises(ValueError, match=r"needs data.train_file; it is not set"):
        load_config(str(own))
    assert load_config(str(own), ["data.train_file=x.jsonl"]).data.train_file == "x.jsonl"
    own.write_text("__requires__: [model.nothing]\n")
    with pytest.raises(ValueError, match="own.yaml: __requires__ names 'model.nothing'"):
        load_config(str(own))


@pytest.mark.parametrize("preset", ["tiny", "dapo", "grpo"])
def test_documented_yaml_loads_back_to_the_same_config(preset, tmp_path):
    config = apply_overrides(load_config(preset, check_required=False), [
        "model.prompt_template='Q: {prompt}\\n\"A\": ' ", "optim.betas=[0.8, 0.9]",
        "algo.dual_clip=3.0", "optim.lr=1e-7", "data.skip_containing=['*', '#']"])
    text = config_to_commented_yaml(config, ["header line"])
    assert text.startswith("# header line\n")
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert load_config(str(path)) == config
    # every field is preceded by its docstring as a comment
    docs = field_docs()
    assert docs["algo"]["eps_high"].startswith("Upper clip range")
    lines = text.splitlines()
    for section, fields in config.to_dict().items():
        for key in fields:
            index = next(i for i, line in enumerate(lines) if line.startswith(f"  {key}: ")
                         and lines[:i].count(f"{section}:") == 1)
            assert lines[index - 1].startswith("  # "), f"{section}.{key} has no comment"


def test_config_changes_and_the_safe_list():
    old = load_config("tiny")
    new = apply_overrides(old, ["optim.steps=200", "algo.eps_high=0.3", "logging.plot=false"])
    assert config_changes(old, new) == [("algo.eps_high", 0.28, 0.3), ("optim.steps", 100, 200),
                                        ("logging.plot", True, False)]
    assert config_changes(old, old) == []
    assert is_safe_on_resume("optim.steps") and is_safe_on_resume("logging.plot")
    assert not is_safe_on_resume("algo.eps_high") and not is_safe_on_resume("optim.lr")


def test_every_field_has_a_docstring():
    import ast
    import inspect

    from verimath.trainer import config as module

    tree = ast.parse(inspect.getsource(module))
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name.endswith("Config")):
            continue
        if node.name == "TrainConfig":
            continue
        body = node.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign):
                nxt = body[i + 1] if i + 1 < len(body) else None
                assert isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant), (
                    f"{node.name}.{stmt.target.id} has no docstring")


def test_grpo_switches_all_four_dapo_controls_off():
    tiny, grpo = load_config("tiny"), load_config("grpo")
    assert tiny.algo.clip_higher and tiny.algo.dynamic_sampling
    assert tiny.algo.token_level_loss and tiny.algo.overlong_filtering
    assert tiny.reward.overlong_punishment
    assert not (grpo.algo.clip_higher or grpo.algo.dynamic_sampling
                or grpo.algo.token_level_loss or grpo.algo.overlong_filtering
                or grpo.reward.overlong_punishment)
    assert grpo.algo.clip_range == (0.2, 0.2)
    assert tiny.algo.clip_range == (0.2, 0.28)
    # Everything else comes from the tiny preset (the __base__ chain).
    assert grpo.model == tiny.model and grpo.warmstart == tiny.warmstart


def test_dapo_preset_matches_the_paper():
    c = load_config("dapo", ["model.path=/models/m"])
    assert (c.algo.eps_low, c.algo.eps_high) == (0.2, 0.28)
    assert c.rollout.group_size == 16 and c.rollout.max_new_tokens == 20480
    assert c.reward.overlong_buffer == 4096 and c.algo.kl_coef == 0.0
    assert c.optim.lr == 1e-6 and c.optim.warmup_steps == 20


def test_overrides_parse_and_apply():
    c = apply_overrides(TrainConfig(), ["algo.eps_high=0.3", "optim.lr=1e-5",
                                        "algorithm.dynamic_sampling=false",
                                        "optim.betas=[0.9, 0.95]", "algo.dual_clip=3"])
    assert c.algo.eps_high == 0.3 and c.optim.lr == 1e-5
    assert c.algo.dynamic_sampling is False
    assert c.optim.betas == (0.9, 0.95)
    assert c.algo.dual_clip == 3.0 and isinstance(c.algo.dual_clip, float)
    assert apply_overrides(c, ["algo.dual_clip=null"]).algo.dual_clip is None


@pytest.mark.parametrize("override, message", [
    ("algo.eps_hihg=0.3", "unknown key algo.eps_hihg"),
    ("algos.eps_high=0.3", "unknown section 'algos'"),
    ("eps_high=0.3", "section.key=value"),
    ("algo.eps_high", "section.key=value"),
    ("optim.steps=1.5", "optim.steps: expected an integer"),
    ("optim.steps=ten", "optim.steps: expected an integer"),
    ("algo.dynamic_sampling=3", "expected true or false"),
    ("optim.lr=-1", "optim.lr must be > 0"),
    ("algo.eps_low=1.5", "algo.eps_low must be in [0, 1)"),
    ("rollout.group_size=1", "rollout.group_size must be >= 2"),
    ("optim.betas=[0.9]", "expected a list of 2 values"),
])
def test_bad_overrides_name_the_problem(override, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        apply_overrides(TrainConfig(), [override])


def test_cross_section_invariants():
    with pytest.raises(ValueError, match="overlong_buffer"):
        apply_overrides(TrainConfig(), ["rollout.max_new_tokens=10", "reward.overlong_buffer=20"])
    with pytest.raises(ValueError, match="without dynamic sampling"):
        apply_overrides(TrainConfig(), ["algo.dynamic_sampling=false", "algo.train_prompts=64",
                                        "algo.mini_batch_prompts=8", "rollout.gen_prompts=32"])
    with pytest.raises(ValueError, match="mini_batch_prompts"):
        apply_overrides(TrainConfig(), ["algo.mini_batch_prompts=64", "algo.train_prompts=32"])


def test_configs_are_frozen():
    c = TrainConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.algo.eps_high = 0.5  # type: ignore[misc]


def test_yaml_round_trip(tmp_path):
    c = apply_overrides(load_config("tiny"), ["optim.betas=[0.8, 0.9]", "algo.dual_clip=3.0"])
    save_config(c, tmp_path / "c.yaml")
    assert load_config(str(tmp_path / "c.yaml")) == c


def test_yaml_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("algo:\n  eps_high: [1, 2\n")
    with pytest.raises(ValueError, match="bad.yaml: invalid YAML"):
        load_config(str(bad))
    bad.write_text("algo:\n  nonsense: 1\n")
    with pytest.raises(ValueError, match=r"bad.yaml: unknown key algo.nonsense"):
        load_config(str(bad))
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        load_config("nope")
    with pytest.raises(ValueError, match="does not exist"):
        load_config(str(tmp_path / "missing.yaml"))


def test_base_chain_cycle_is_an_error(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.write_text(f"__base__: {loop}\n")
    with pytest.raises(ValueError, match="circular"):
        read_config_file(str(loop))


floats = st.floats(0.0, 0.99, allow_nan=False)


@given(eps_low=floats, eps_high=st.floats(0.0, 5.0, allow_nan=False), higher=st.booleans())
def test_clip_range_property(eps_low, eps_high, higher):
    settings = {"algo": {"eps_low": eps_low, "eps_high": eps_high, "clip_higher": higher}}
    if higher and eps_high < eps_low:  # an inverted range is refused, naming both numbers
        with pytest.raises(ValueError, match=rf"algo.eps_high \({eps_high}\) is below "
                                             rf"algo.eps_low \({eps_low}\)"):
            config_from_dict(settings)
        return
    low, high = config_from_dict(settings).algo.clip_range
    assert low == eps_low
    assert high == (eps_high if higher else eps_low)


@given(length=st.integers(2, 64), new_tokens=st.integers(1, 64))
def test_vllm_max_model_len_must_hold_the_response(length, new_tokens):
    settings = {"rollout": {"vllm_max_model_len": length, "max_new_tokens": new_tokens},
                "reward": {"overlong_punishment": False}}
    if length > new_tokens:
        assert config_from_dict(settings).rollout.vllm_max_model_len == length
    else:
        with pytest.raises(ValueError, match=f"vllm_max_model_len \\({length}\\) must exceed "
                                             f"rollout.max_new_tokens \\({new_tokens}\\)"):
            config_from_dict(settings)


@pytest.mark.parametrize("value, expected", [
    ("tensorboard", ("tensorboard",)), ("[jsonl, tensorboard]", ("jsonl", "tensorboard"))])
def test_a_single_backend_name_is_a_list_of_one(value, expected):
    assert apply_overrides(TrainConfig(), [f"logging.backends={value}"]).logging.backends == \
        expected
    assert apply_overrides(TrainConfig(), ["data.skip_containing='*'"]).data.skip_containing == \
        ("*",)


@given(value=st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False,
                                                             allow_infinity=False),
                       st.booleans()))
def test_override_values_parse_as_yaml(value):
    text = yaml.safe_dump(value).strip().removesuffix("...").strip()
    _, _, parsed = parse_override(f"optim.lr={text}")
    assert parsed == value or (isinstance(value, float) and parsed == pytest.approx(value))


def test_a_bad_base_names_the_file_that_asks_for_it(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("__base__: tinyy\n")
    with pytest.raises(ValueError, match=r"mine.yaml: __base__: unknown preset 'tinyy'"):
        load_config(str(path))


def test_a_config_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"# caf\xe9\noptim:\n  steps: 3\n")
    with pytest.raises(ValueError, match=r"latin.yaml: not UTF-8 text \(byte 0xe9 at offset 5\)"):
        load_config(str(path))


def test_a_retired_preset_says_why_and_what_to_train_instead():
    with pytest.raises(ValueError, match=r"preset 'chain' is retired: .*Train `chain-mix`"):
        load_config("chain")


def test_a_retired_preset_as_a_users_base_names_the_base_key(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("__base__: chain\noptim:\n  steps: 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"mine\.yaml: __base__: preset 'chain' is retired"):
        load_config(str(path))


def test_chain_base_is_the_retired_chain_and_chain_mix_starts_from_it():
    base, mix = load_config("chain-base"), load_config("chain-mix")
    assert (base.data.family, base.data.level, base.rollout.max_new_tokens) == ("Chain", 3, 96)
    assert mix.data.family == "ChainMix" and mix.rollout.max_new_tokens == 96
