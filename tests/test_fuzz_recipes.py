"""Bad values generated from every first-party parameter's declared domain are refused before anything is
built: one ``RlplugError`` line (exit 2) naming the field, never a traceback, a crash later or a silent run.

The in-process cases resolve and validate only (``Session.resolve``; no torch, no environment): for each
algorithm, each ``Param`` gets values just outside each end of its bounds, non-finite and beyond-64-bit
numbers, a wrong type and a bad choice; each cross-field rule gets one breaking combination; each
recipe field (``steps``, ``seed``, ``num_envs``, ``eval_episodes``, ...) the same as the parameters.
A few subprocess cases check the command line's side: exit 2, one line on stderr, no traceback.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from conftest import run_cli

from rlplug.errors import RlplugError
from rlplug.pipeline.session import Session, check_recipe
from rlplug.recipes.fields import FIELD_PARAMS
from rlplug.schema import AutoOrFloat, Interval, Param

FIRST_PARTY = ("ppo", "mappo", "sac", "td3", "ddpg", "dqn", "iql", "cql")


@pytest.fixture(scope="module")
def session() -> Session:
    return Session()


def _recipe_of(session: Session, algorithm: str) -> str:
    """A first-party recipe of ``algorithm`` (the first by name)."""
    for name in session.book.names():
        table, _ = session.book.raw(name)
        if table.get("algorithm") == algorithm:
            return name
    raise AssertionError(f"registry.toml has no recipe for {algorithm}")


def _just_outside(bounds: Interval, integer: bool) -> list[Any]:
    """A value just past each finite end of ``bounds`` (the end itself where the end is open)."""
    out: list[Any] = []
    for end, is_open, sign in ((bounds.low, bounds.low_open, -1), (bounds.high, bounds.high_open, +1)):
        if end is None:
            continue
        if is_open:
            out.append(end if integer else float(end))
        elif integer:
            out.append(int(end) + sign)
        else:
            out.append(float(end) + sign * max(1e-6, abs(float(end)) * 1e-6))
    return out


def bad_values(param: Param) -> list[tuple[Any, str]]:
    """``(value, kind)`` pairs outside ``param``'s domain, generated from its declaration."""
    kind = param.value_type
    cases: list[tuple[Any, str]] = []
    if isinstance(param, AutoOrFloat):
        cases += [("automatic", "wrong type"), (True, "wrong type"), (math.nan, "not finite"), (-math.inf, "not finite")]
        cases += [(v, "outside bounds") for v in _just_outside(param.bounds, False)] if param.bounds else []
        return cases
    if kind is bool:
        return [("yes", "wrong type"), (1, "wrong type")]
    if kind is str:
        cases.append((3, "wrong type"))
        if param.choices:
            cases.append(("no-such-" + str(param.choices[0]), "bad choice"))
        return cases
    if kind is list:
        cases += [("64", "wrong type"), ([1.5], "wrong item type")]
        if param.item_bounds is not None:
            cases += [([v], "item outside bounds") for v in _just_outside(param.item_bounds, param.item_type is int)]
        if param.length is not None and param.length.high is not None:
            cases.append(([1] * (int(param.length.high) + 1), "too long"))
        return cases
    cases += [("many", "wrong type"), (True, "wrong type")]
    if kind is int:
        cases += [(0.5, "wrong type"), (2**63, "beyond 64 bits")]
    else:
        cases += [(math.nan, "not finite"), (math.inf, "not finite")]
    if param.bounds is not None:
        cases += [(v, "outside bounds") for v in _just_outside(param.bounds, kind is int)]
    return cases


def _assert_one_line_refusal(err: BaseException, field: str) -> None:
    assert isinstance(err, RlplugError) and err.exit_code == 2, repr(err)
    text = str(err)
    assert "\n" not in text and text.strip() == text, text
    assert field in text, text


# ---- every parameter has a domain ------------------------------------------------------------------------


def test_every_first_party_parameter_declares_a_domain(session):
    for name in FIRST_PARTY:
        spec = session.host.algorithms[name]
        missing = [p.name for p in spec.params if not p.domain_text]
        assert not missing, f"{name}: no domain for {missing}"
        for param in spec.params:
            if param.value_type in (int, float) and not isinstance(param, AutoOrFloat):
                assert param.bounds is not None or param.check is not None, f"{name}.{param.name} has no bounds"
    assert {"steps", "seed", "num_envs", "eval_episodes", "target"} <= set(FIELD_PARAMS)


def test_every_registry_recipe_still_validates(session):
    for name in session.book.names():
        recipe = session.resolve(name)
        spec = session.host.algorithms[recipe.algorithm]
        for backend in spec.backends:  # the translators (`rlplug show --backend B`) accept them too
            from rlplug.pipeline.session import backend_settings

            backend_settings(spec, backend, {**spec.defaults(), **recipe.hyperparameters}, recipe)


# ---- generated bad values, in process --------------------------------------------------------------------


def _hyperparameter_cases() -> list[tuple[str, str, Any, str]]:
    import importlib

    cases = []
    for algorithm in FIRST_PARTY:
        (spec,) = importlib.import_module(f"rlplug_{algorithm}").plugin.rlplug_algorithms()
        for param in spec.params:
            for value, kind in bad_values(param):
                cases.append((algorithm, param.name, value, kind))
    return cases


HYPERPARAMETER_CASES = _hyperparameter_cases()


@pytest.mark.parametrize(
    "algorithm,name,value,kind", HYPERPARAMETER_CASES, ids=[f"{a}-{n}-{k}-{v!r:.20}" for a, n, v, k in HYPERPARAMETER_CASES]
)
def test_bad_hyperparameter_is_refused_in_one_line(session, algorithm, name, value, kind):
    recipe = session.resolve(_recipe_of(session, algorithm))
    spec = session.host.algorithms[algorithm]
    recipe.hyperparameters[name] = value
    with pytest.raises(RlplugError) as caught:
        check_recipe(spec, recipe)
    _assert_one_line_refusal(caught.value, f"'{name}'")
    param = spec.param_map[name]
    if kind == "outside bounds":
        assert str(param.bounds) in str(caught.value)
    if kind == "bad choice":
        assert repr(param.choices[0]) in str(caught.value)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return repr(value)


def _field_cases() -> list[tuple[str, Any, str]]:
    cases = []
    for name, param in FIELD_PARAMS.items():
        if name in ("hyperparameters", "extends", "description", "dataset", "loss", "beat_dataset"):
            continue  # checked elsewhere (names, datasets, losses) or with no domain beyond their type
        if param.value_type is dict:
            cases.append((name, "{ 1x = 2 }", "bad key"))
            continue
        if param.check is not None:  # a required name: algorithm, env, backend
            cases.append((name, '"  "', "empty"))
            continue
        for value, kind in bad_values(param):
            if kind in ("wrong type", "bad choice") and isinstance(value, str) and param.value_type is not str:
                continue  # `--set steps=many` is the hyperparameter case's twin; keep the list short
            cases.append((name, _toml(value), kind))
    return cases


FIELD_CASES = _field_cases()


@pytest.mark.parametrize("name,text,kind", FIELD_CASES, ids=[f"{n}-{k}-{t:.20}" for n, t, k in FIELD_CASES])
def test_bad_recipe_field_is_refused_in_one_line(session, name, text, kind):
    with pytest.raises(RlplugError) as caught:
        session.resolve("ppo-cartpole", [f"{name}={text}"])
    _assert_one_line_refusal(caught.value, f"'{name}'" if name != "env_kwargs" else "env_kwargs")


RULE_BREAKERS = {  # rule text -> overrides that break it (on the algorithm's first registry recipe)
    "minibatches <= rollout_steps x num_envs": ["rollout_steps=4", "num_envs=2", "minibatches=9"],
    "rollout_steps x num_envs <= 2**24": ["rollout_steps=16777216", "num_envs=2", "minibatches=1"],
    "buffer_size >= batch_size": ["buffer_size=100", "batch_size=101"],
    "learning_starts < steps": ["learning_starts=5000", "steps=5000"],
    "batch_size % trajectory_slice == 0 with td1 / td_lambda": ["value_estimator=\"td1\"", "trajectory_slice=7",
                                                                 "batch_size=64", "num_envs=1"],
    "num_envs == 1 with td1 / td_lambda": ["value_estimator=\"td_lambda\"", "num_envs=2", "trajectory_slice=8",
                                           "batch_size=64"],
    "rollout_steps % sequence_length == 0 with recurrent": ["recurrent=\"lstm\"", "rollout_steps=32", "sequence_length=5"],
    "minibatches <= rollout_steps / sequence_length x num_envs with recurrent": ["recurrent=\"gru\"", "rollout_steps=32",
                                                                                "sequence_length=16", "num_envs=2", "minibatches=5"],
    "value_estimator == 'td0' with n_step > 1": ["n_step=3", "value_estimator=\"td1\"", "num_envs=1", "batch_size=64"],
    "not (use_sde and recurrent)": ["use_sde=true", "recurrent=\"lstm\"", "rollout_steps=32", "sequence_length=8"],
}

RULE_CASES = [
    (algorithm, rule.text)
    for algorithm in FIRST_PARTY
    for rule in __import__(f"rlplug_{algorithm}").plugin.rlplug_algorithms()[0].rules
]


@pytest.mark.parametrize("algorithm,text", RULE_CASES, ids=[f"{a}-{t}" for a, t in RULE_CASES])
def test_broken_rule_is_refused_in_one_line(session, algorithm, text):
    assert text in RULE_BREAKERS, f"add a breaking example for the new rule {text!r}"
    with pytest.raises(RlplugError) as caught:
        session.resolve(_recipe_of(session, algorithm), RULE_BREAKERS[text])
    _assert_one_line_refusal(caught.value, f"the rule {text}")


def test_unknown_abbreviation_names_the_parameter_meant(session):
    with pytest.raises(RlplugError) as caught:
        session.resolve("ppo-cartpole", ["lr=-1"])
    _assert_one_line_refusal(caught.value, "(did you mean 'learning_rate'?)")
    with pytest.raises(RlplugError) as caught:
        session.resolve("sac-pendulum", ["lr=-1"])
    _assert_one_line_refusal(caught.value, "'actor_learning_rate'")


def test_bad_recipe_name_in_a_file_is_refused(tmp_path):
    path = tmp_path / "r.toml"
    for key in ('""', '" spaced"', '"a/b"'):
        path.write_text(f'[recipes.{key}]\nalgorithm = "ppo"\nenv = "CartPole-v1"\nbackend = "skrl"\nsteps = 1\ntarget = 1.0\n')
        with pytest.raises(RlplugError) as caught:
            Session(recipe_files=(str(path),))
        _assert_one_line_refusal(caught.value, "is not a name")


# ---- the command line: exit 2, one line, no traceback ----------------------------------------------------


CLI_CASES = [
    (("train", "ppo-cartpole", "--set", "gamma=1.5", "--no-write"), "hyperparameter 'gamma' = 1.5 is outside [0, 1]"),
    (("train", "ppo-cartpole", "--seed", "-1", "--no-write"), "'seed' = -1 is outside [0, 2**32 - 1]"),
    (("show", "ppo-cartpole", "--backend", "torchrl", "--set", "minibatches=0"), "'minibatches' = 0 is outside [1, 2**24]"),
    (("show", "sac-pendulum", "--set", "batch_size=0"), "'batch_size' = 0 is outside"),
    (("show", "ppo-cartpole", "--set", "lr=-1"), "did you mean 'learning_rate'?"),
    (("show", "ppo-cartpole", "--set", "minibatches=1000"), "break the rule minibatches <= rollout_steps x num_envs"),
    (("train", "mappo-simple-spread", "--set", "env_kwargs.N=0", "--no-write"),
     "environment 'mpe:simple_spread' failed to start with env_kwargs {'N': 0"),
    (("train", "ppo-cartpole", "--set", "env_kwargs.render_mode=1", "--no-write"), "environment 'CartPole-v1' failed to start"),
    (("train", "ppo-cartpole", "--steps", "1e30", "--no-write"), "'steps' = 1e+30 is outside [1, 10**12]"),
]


@pytest.mark.parametrize("argv,expected", CLI_CASES, ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_cli_refuses_in_one_line(argv, expected):
    result = run_cli(*argv, timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, (result.returncode, result.stderr)
    assert lines[0].startswith("rlplug: error: ") and expected in lines[0], lines[0]
