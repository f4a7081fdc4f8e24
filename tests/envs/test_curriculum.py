"""Difficulty that follows the policy: the level rule, the solved-prompt filter, and both inside
`MathEnv` and the group env (deterministic, resume-exact, logged)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verimath.envs import AdaptiveLevel, MathEnv, SkipSolved, generate, make_group_env
from verimath.envs.curriculum import (
    LevelCurriculum,
    SolvedFilter,
    band_side,
    cliff_side,
    draw_level,
    mix_of,
    mix_side,
)

PROPS = settings(max_examples=60, deadline=None)

bands = st.tuples(st.floats(0.0, 0.5), st.floats(0.5, 1.0)).filter(lambda b: b[0] < b[1])
level_bounds = st.tuples(st.integers(1, 5), st.integers(1, 5)).map(sorted)
adaptive = st.builds(
    lambda band, bounds, n, k, patience: AdaptiveLevel(band[0], band[1], n, *bounds,
                                                       substeps=k, patience=patience),
    bands, level_bounds, st.integers(1, 6), st.integers(1, 4), st.integers(1, 3))
# A run of groups: (pass-rate pattern index, group size) per step.
evidence = st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=6), min_size=1, max_size=25)


def correct_matrix(counts: list[int], group_size: int = 4) -> np.ndarray:
    """(P, G) with counts[p] correct answers in group p."""
    return np.arange(group_size)[None, :] < np.asarray(counts)[:, None]


@PROPS
@given(settings_=adaptive, rates=st.lists(st.floats(0, 1), max_size=12))
def test_band_side_compares_too_easy_and_too_hard_groups(settings_, rates):
    side = band_side(rates, settings_)
    easy = sum(r > settings_.high for r in rates) / max(len(rates), 1)
    hard = sum(r < settings_.low for r in rates) / max(len(rates), 1)
    assert side == (1 if easy > hard + settings_.margin else
                    -1 if hard > easy + settings_.margin else 0)
    if side > 0:  # never "too easy" when most groups are too hard, nor the other way round
        assert easy > hard
    if side < 0:
        assert hard > easy


window_st = st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])),
                     max_size=10)


@PROPS
@given(settings_=adaptive, window=window_st)
def test_mix_side_needs_min_groups_and_steps_away_from_a_cliff(settings_, window):
    side = mix_side(window, settings_)
    if len(window) < settings_.min_groups:
        assert side == 0
        return
    base = [r for up, r in window if not up]
    upper = [r for up, r in window if up]

    def hopeless(part):
        return len(part) >= 2 and all(r < settings_.low for r in part)

    if hopeless(upper) and not hopeless(base):  # never further into a level none can solve
        assert side == -1 and cliff_side(window, settings_) == -1
    elif len(base) >= 2 and len(upper) >= 2 and np.mean(base) < np.mean(upper):
        assert side == 1 and cliff_side(window, settings_) == 1  # nor into a no easier one
    else:
        assert cliff_side(window, settings_) == 0
        assert side == band_side([r for _, r in window], settings_)


@PROPS
@given(settings_=adaptive, u=st.floats(0, 1, exclude_max=True))
def test_every_difficulty_step_poses_levels_in_bounds_one_apart(settings_, u):
    k = settings_.substeps
    for step in range(settings_.lowest, settings_.highest + 1):
        level, share_up = mix_of(step, k)
        drawn = draw_level(step, k, u)
        assert settings_.min_level <= drawn <= settings_.max_level
        assert drawn in (level, level + 1) and (drawn == level + 1) == (u < share_up)
        assert 0 <= share_up < 1 and level + share_up == pytest.approx(step / k)


def _observe_one(cur: LevelCurriculum, count: int, up: bool, group_size: int = 4) -> None:
    """One group of `count` right answers at the current difficulty, posed one level up when
    `up` and the mix has a share there."""
    level = cur.level("F") + int(up and cur.step("F") % cur.settings.substeps > 0)
    cur.observe(["F"], [cur.difficulty("F")], [level], correct_matrix([count], group_size))


groups_st = st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=80)


@PROPS
@given(settings_=adaptive, start=st.integers(1, 5), groups=groups_st)
def test_difficulty_stays_in_bounds_and_moves_one_step_only_on_enough_evidence(
        settings_, start, groups):
    cur = LevelCurriculum(settings_, start)
    window, sides, failed = [], [], 0
    for count, up in groups:
        before = cur.step("F")
        is_up = int(up and before % settings_.substeps > 0)
        _observe_one(cur, count, up)
        after = cur.step("F")
        window = (window + [(is_up, count / 4)])[-settings_.min_groups:]
        sides.append(mix_side(window, settings_))
        assert settings_.lowest <= after <= settings_.highest
        assert settings_.min_level <= cur.level("F") <= settings_.max_level
        if after == before:
            continue
        last = sides[-settings_.patience:]
        assert abs(after - before) == 1 and len(window) == settings_.min_groups
        assert len(last) == settings_.patience and all(s == after - before for s in last)
        if after > before and not any(u for u, _ in window):  # a blind probe waits
            assert len(sides) >= settings_.min_groups * 2 ** failed
        failed = cur.failed.get("F", 0)
        window, sides = [], []
    stats = cur.stats()
    assert stats["curriculum/level/F"] == cur.level("F")
    assert stats["curriculum/difficulty/F"] == pytest.approx(cur.step("F") / settings_.substeps)
    assert stats["curriculum/groups/F"] == len(window)
    if window:
        rates = [r for _, r in window]
        assert stats["curriculum/informative/F"] == pytest.approx(
            np.mean([0 < r < 1 for r in rates]))
        assert stats["curriculum/pass_rate/F"] == pytest.approx(np.mean(rates))


def test_groups_posed_at_an_old_difficulty_are_not_evidence():
    cur = LevelCurriculum(AdaptiveLevel(min_groups=2, substeps=2), start_level=3)
    cur.observe(["F", "F"], [2.5, 4.0], [3, 4], correct_matrix([4, 4]))  # not difficulty 3
    assert cur.difficulty("F") == 3 and cur.window.get("F", []) == []
    cur.observe(["F", "F", "F"], [3.0, None, 3.0], [3, 3, 3], correct_matrix([4, 4, 4]))
    assert cur.difficulty("F") == 3.5 and cur.stats()["curriculum/moves/F"] == 1
    cur.observe(["F", "F"], [3.0, 3.0], [3, 3], correct_matrix([0, 0]))  # posed before it
    assert cur.difficulty("F") == 3.5


def test_patience_holds_the_difficulty_through_a_short_excursion():
    cur = LevelCurriculum(AdaptiveLevel(min_groups=2, patience=3), start_level=2)
    for counts in ([4, 4, 4], [0], [4], [4], [4]):  # twice too easy, balanced, twice too easy
        cur.observe(["F"] * len(counts), [2.0] * len(counts), [2] * len(counts),
                    correct_matrix(counts))
        assert cur.level("F") == 2
    cur.observe(["F"], [2.0], [2], correct_matrix([4]))  # the third check in a row above it
    assert cur.level("F") == 3 and cur.window["F"] == [] and cur.streak["F"] == 0


def _until_moved(cur: LevelCurriculum, step: int, limit: int = 1000):
    """Yields while the difficulty is at `step`; fails after `limit` rounds without a move."""
    for _ in range(limit):
        if cur.step("F") != step:
            return
        yield
    pytest.fail(f"the difficulty stayed at step {step} for {limit} rounds")


def test_a_failed_probe_of_the_next_level_doubles_the_wait_and_a_reachable_one_ends_it():
    cur = LevelCurriculum(AdaptiveLevel(min_groups=4, substeps=4), start_level=2)
    waits = []
    for _ in range(4):  # base level all right, the next level all wrong: a cliff
        groups = 0
        for _ in _until_moved(cur, 8):
            _observe_one(cur, 4, up=False)
            groups += 1
        waits.append(groups)
        for _ in _until_moved(cur, 9):  # the probe: a quarter of the problems one level up
            _observe_one(cur, 0, up=True)
            _observe_one(cur, 4, up=False)
        assert cur.step("F") == 8
    assert waits == [4, 8, 16, 32] and cur.failed["F"] == 4
    groups = 0
    for _ in _until_moved(cur, 8):
        _observe_one(cur, 4, up=False)
        groups += 1
    assert groups == 4 * 2**4  # the wait after four failed probes in a row
    for _ in _until_moved(cur, 9):  # now the next level is within reach: the wait ends
        _observe_one(cur, 2, up=True)
        _observe_one(cur, 4, up=False)
    assert cur.step("F") == 10 and cur.failed["F"] == 0


def test_a_level_below_that_the_policy_cannot_solve_is_a_cliff_too():
    cur = LevelCurriculum(AdaptiveLevel(min_groups=4, substeps=4), start_level=2)
    for _ in range(4):  # level 2 mostly too hard: a blind probe down
        _observe_one(cur, 0, up=False)
    assert cur.step("F") == 7  # level 1, three quarters; level 2, a quarter
    for _ in _until_moved(cur, 7):  # level 1 all wrong, level 2 half right: back up
        _observe_one(cur, 0, up=False)
        _observe_one(cur, 2, up=True)
    assert cur.step("F") == 8 and cur.failed["F"] == 1
    for _ in range(7):  # the next probe down waits twice as long
        _observe_one(cur, 0, up=False)
    assert cur.step("F") == 8
    _observe_one(cur, 0, up=False)
    assert cur.step("F") == 7


def test_at_a_cliff_the_mix_stays_informative_where_whole_levels_swing():
    """A policy that solves level 2 with p = 0.95 per sample and never solves level 3: whole
    levels spend half the groups on level 3, the mix almost none."""
    def run(substeps: int) -> tuple[float, float]:
        rng = np.random.default_rng(0)
        cur = LevelCurriculum(AdaptiveLevel(min_groups=16, substeps=substeps), start_level=2)
        informative = at_three = 0
        for _ in range(4000):
            level = cur.draw_level("F", float(rng.random()))
            right = rng.random(16) < (0.95 if level == 2 else 0.0)
            cur.observe(["F"], [cur.difficulty("F")], [level], right[None, :])
            informative += 0 < right.sum() < 16
            at_three += level == 3
        return informative / 4000, at_three / 4000

    whole, mixed = run(1), run(4)
    assert whole[1] > 0.3 and mixed[1] < 0.03
    assert mixed[0] > whole[0] + 0.1


def _feed(cur: LevelCurriculum, steps: list[list[int]]) -> None:
    for counts in steps:
        for i, c in enumerate(counts):
            _observe_one(cur, c, up=bool(i % 2))


@PROPS
@given(steps=evidence, cut=st.integers(0, 25), k=st.integers(1, 3), patience=st.integers(1, 3))
def test_level_curriculum_resumes_exactly(steps, cut, k, patience):
    settings_ = AdaptiveLevel(min_groups=3, substeps=k, patience=patience)
    whole, first, resumed = (LevelCurriculum(settings_, 2) for _ in range(3))
    _feed(whole, steps)
    _feed(first, steps[:cut])
    resumed.load_state_dict(copy.deepcopy(first.state_dict()))
    _feed(resumed, steps[cut:])
    assert resumed.state_dict() == whole.state_dict()


@PROPS
@given(visits=st.integers(1, 3), recheck=st.integers(1, 4), epochs=st.integers(1, 12),
       solved=st.sets(st.integers(0, 5)), seed=st.integers(0, 2**31))
def test_only_settled_prompts_are_skipped_and_each_comes_back(visits, recheck, epochs, solved,
                                                               seed):
    problems = [generate("Chain", 0, i, 1) for i in range(6)]
    env = MathEnv(problems=problems, skip_solved={"visits": visits, "recheck_after": recheck})
    filt, walk = env.source.skip, []
    admit = filt.admit
    filt.admit = lambda pid: walk.append((pid, admit(pid))) or walk[-1][1]
    env.reset(seed=seed)
    for _ in range(6 * epochs):
        env.observe([env.problem], [[problems.index(env.problem) in solved]])
        env.reset()
    for i, p in enumerate(problems):
        verdicts = [ok for pid, ok in walk if pid == p.id]
        if i not in solved:
            assert all(verdicts), "a prompt that was missed was skipped"
        run = 0
        for ok in verdicts:  # never more than `recheck` skips in a row: it comes back
            run = 0 if ok else run + 1
            assert run <= recheck
        assert verdicts.count(True) >= min(visits, len(verdicts))
    stats = env.curriculum_stats()
    assert stats["curriculum/skipped"] == sum(not ok for _, ok in walk)
    assert stats["curriculum/settled"] <= len(solved)


def test_a_miss_unsettles_a_prompt_and_skips_are_counted():
    filt = SolvedFilter(SkipSolved(visits=2, recheck_after=2))
    p = generate("Chain", 0, 0, 1)
    for _ in range(2):
        filt.observe([p], [[True, True]])
    assert filt.is_settled(p.id)
    assert [filt.admit(p.id) for _ in range(3)] == [False, False, True]  # re-check on the 3rd
    filt.observe([p], [[True, False]])
    assert not filt.is_settled(p.id) and filt.admit(p.id)
    assert filt.stats() == {"curriculum/settled": 0.0, "curriculum/skipped": 2.0,
                            "curriculum/rechecked": 1.0}


def _train_like(env, rounds: int, skill: float, seed: int = 0) -> list[str]:
    """Steps a group env with a 'policy' right with probability ``skill / level`` (from a
    fixed RNG), as the trainer does; returns the ids posed."""
    rng, ids = np.random.default_rng(seed), []
    for r in range(rounds):
        _, info = env.reset(seed=0 if r == 0 else None, options={"include_answer": True})
        ids += [p.id for p in env.problems]
        levels = np.array([p.meta.get("level", 1) for p in env.problems])
        right = rng.random((env.num_problems, env.group_size)) < (skill / levels)[:, None]
        answers = np.asarray(info["answer"]).reshape(env.num_problems, env.group_size)
        env.step([f"Answer: {a}" if ok else "Answer: none"
                  for a, ok in zip(answers.ravel(), right.ravel())])
    return ids


@pytest.mark.parametrize("kwargs", [
    {"env_id": "verimath/Chain-v0", "level": 1, "adapt_level": {"min_groups": 8}},
    {"env_id": "verimath/Chain-v0", "level": 1,
     "adapt_level": {"min_groups": 4, "substeps": 2, "patience": 2}},
    {"env_id": "verimath/Mixed-v0", "level": 2, "adapt_level": {"min_groups": 4}},
    {"env_id": "verimath/Dataset-v0", "skip_solved": True,
     "problems": [generate("Chain", 1, i, 1) for i in range(20)]},
])
def test_group_env_learns_from_its_steps_and_resumes_exactly(kwargs):
    kwargs = dict(kwargs)
    env_id = kwargs.pop("env_id")
    whole = make_group_env(env_id, 8, 4, **kwargs)
    ids = _train_like(whole, 12, skill=2.5)
    stats = whole.curriculum_stats()
    if "adapt_level" in kwargs:  # the problems got harder as the policy solved them
        assert any(k.startswith("curriculum/moves/") and v > 0 for k, v in stats.items())
        assert max(int(i.split("/")[2][1:]) for i in ids[-8:]) > kwargs["level"]
    else:
        assert stats["curriculum/skipped"] > 0
    first = make_group_env(env_id, 8, 4, **kwargs)
    head = _train_like(first, 6, skill=2.5)
    resumed = make_group_env(env_id, 8, 4, **kwargs)
    resumed.load_state_dict(copy.deepcopy(first.state_dict()))
    rng = np.random.default_rng(0)
    rng.random((6, 8, 4))  # the 'policy' RNG past the first six rounds
    tail = []
    for _ in range(6):
        resumed.reset()
        tail += [p.id for p in resumed.problems]
        levels = np.array([p.meta.get("level", 1) for p in resumed.problems])
        right = rng.random((8, 4)) < (2.5 / levels)[:, None]
        resumed.step([f"Answer: {p.answer}" if ok else "Answer: none"
                      for p, row in zip(resumed.problems, right) for ok in row])
    assert head + tail == ids
    assert resumed.curriculum_stats() == stats


def test_switches_are_refused_where_they_do_not_apply():
    with pytest.raises(ValueError, match="adapt_level"):
        MathEnv(problems=[generate("Chain", 0, 0, 1)], adapt_level=True)
    with pytest.raises(ValueError, match="skip_solved"):
        MathEnv(family="Chain", skip_solved=True)
    with pytest.raises(ValueError, match="adapt_level.*known fields"):
        MathEnv(family="Chain", adapt_level={"lo": 0.2})
    with pytest.raises(ValueError, match="low < high"):
        AdaptiveLevel(low=0.9, high=0.1)


def test_evaluation_problems_are_not_evidence():
    env = make_group_env("verimath/Chain-v0", 4, 2, adapt_level={"min_groups": 1})
    given_problems = [generate("Chain", 9, i, 1) for i in range(4)]
    env.reset(seed=0, options={"problems": given_problems})
    env.step([f"Answer: {p.answer}" for p in given_problems for _ in range(2)])
    assert env.curriculum_stats().get("curriculum/moves/Chain", 0) == 0


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("verimath/Chain-v0", {"adapt_level": {"min_groups": 1}}),
    ("verimath/Mixed-v0", {"adapt_level": True, "level": 3}),
    ("verimath/Dataset-v0", {"skip_solved": {"visits": 1, "recheck_after": 1},
                             "problems": [generate("Chain", 2, i, 2) for i in range(8)]}),
])
def test_contract_checks_pass_with_the_switches_on(env_id, kwargs):
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env
    from verimath.envs import check_math_env
    from verimath.envs.checks import CHECKS

    assert check_math_env(gym.make(env_id, **kwargs)) == list(CHECKS)
    check_env(gym.make(env_id, **kwargs).unwrapped, skip_render_check=True)


class _Wrapper:
    """A generator wrapping another as ``.generator`` (as the trainer's held-out filter does)."""

    __name__ = "Mixed"

    def __init__(self) -> None:
        from verimath.envs import FAMILIES

        self.generator = FAMILIES["Mixed"]

    def __call__(self, rng, level):
        return self.generator(rng, level)


def test_a_wrapped_mixing_generator_keeps_a_level_per_family():
    env = make_group_env(lambda: MathEnv(generator=_Wrapper(), level=2,
                                         adapt_level={"min_groups": 2}), 16, 4)
    _train_like(env, 6, skill=2.5)
    levels = {k.rsplit("/", 1)[1]: v for k, v in env.curriculum_stats().items()
              if k.startswith("curriculum/level/")}
    assert len(levels) > 3 and len(set(levels.values())) > 1, levels
    env.reset()
    for p in env.problems:  # each problem is posed at its own family's level
        assert p.meta["level"] == levels.get(p.meta["family"], 2)
