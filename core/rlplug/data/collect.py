"""Making offline datasets: rolling out a trained run's policy (or a random one), exporting a run's
replay memory, and building the datasets ``registry.toml`` declares, deterministically from seeds.

Every dataset records the random-policy and expert-policy returns of its env, measured here, so
offline results are reported as D4RL-style normalised scores.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from .datasets import DatasetError, DatasetInfo, check_target, data_root, episode_returns, write, writing_dataset
from ..envs.factory import env_errors, make_checked, probe_spaces
from ..errors import NoReplayMemoryError
from ..envs.evaluation import EVAL_SEED_OFFSET
from ..contract.hookspecs import Build
from ..util.jsonfiles import read_json_object

REFERENCE_EPISODES = 20
"""Episodes behind each reference return (random policy, expert policy)."""
DECLARED_FIELDS = {
    "description": (str, ""),
    "env": (str, None),
    "policy": (str, None),
    "policy_backend": (str, "skrl"),
    "policy_steps": (int, 0),
    "expert": (str, ""),
    "expert_steps": (int, 0),
    "noise": (float, 0.0),
    "steps": (int, None),
    "seed": (int, 0),
    "collect_envs": (int, 1),
    "source": (str, ""),
}
TRANSITION_KEYS = ("observation", "action", "reward", "next_observation", "terminated", "truncated")
OPTIONAL_FIELDS = {"verified_return": float}
"""Declared fields without a default: ``verified_return`` is the mean episode return of the build the recipes on
the dataset were verified on (a build from other code can train a different behaviour policy: see ``drift``)."""


# ---- policies -----------------------------------------------------------------------------------


def random_return(env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int) -> float:
    """Mean return of a uniformly random policy over ``episodes`` episodes (seeded)."""
    with env_errors(env_id, env_kwargs, "random-policy reference"):
        env = make_checked(env_id, env_id, **env_kwargs)
    env.action_space.seed(seed)
    totals = []
    try:
        for episode in range(episodes):
            env.reset(seed=seed + EVAL_SEED_OFFSET + episode)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
                total += float(reward)
                done = terminated or truncated
            totals.append(total)
    finally:
        env.close()
    return float(np.mean(totals))


def behaviour_action(act: Any, space: Any, observation: np.ndarray, noise: float, rng: np.random.Generator) -> Any:
    """The policy's deterministic action with exploration: epsilon-greedy (discrete, epsilon = noise) or
    Gaussian noise of ``noise`` x half the action range, clipped to the bounds (continuous)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Discrete):
        if noise and rng.random() < noise:
            return int(rng.integers(space.n))
        return int(np.asarray(act(observation[None])).reshape(-1)[0])
    action = np.asarray(act(observation[None]), dtype=np.float64).reshape(space.shape)
    if noise:
        action = action + rng.normal(0.0, noise * (space.high - space.low) / 2.0, size=space.shape)
    return np.clip(action, space.low, space.high).astype(space.dtype)


def rollout(env_id: str, env_kwargs: dict[str, Any], act: Any, steps: int, noise: float, seed: int, progress: bool,
            label: str = "collecting", envs: int = 1) -> dict[str, np.ndarray]:  # fmt: skip
    """``steps`` transitions of ``act`` (``None``: uniform random) in one env (``envs`` > 1: ``vector_rollout``),
    episodes contiguous.

    The last transition is marked truncated when its episode is still running, so every stored
    episode ends with a flag.
    """
    from tqdm import tqdm

    if envs > 1:
        return vector_rollout(env_id, env_kwargs, act, steps, noise, seed, progress, label, envs)

    with env_errors(env_id, env_kwargs, "dataset collection"):
        env = make_checked(env_id, env_id, **env_kwargs)
    space = env.action_space
    space.seed(seed)
    rng = np.random.default_rng(seed)
    columns: dict[str, list[Any]] = {k: [] for k in TRANSITION_KEYS}
    observation, _ = env.reset(seed=seed)
    try:
        for _ in tqdm(range(steps), unit="step", desc=label, disable=not progress, leave=False):
            observation = np.asarray(observation, dtype=np.float32)
            action = space.sample() if act is None else behaviour_action(act, space, observation, noise, rng)
            next_observation, reward, terminated, truncated, _ = env.step(action)
            for key, value in zip(columns, (observation, action, reward, next_observation, terminated, truncated)):
                columns[key].append(value)
            observation = next_observation
            if terminated or truncated:
                observation, _ = env.reset()
    finally:
        env.close()
    arrays = {k: np.asarray(v) for k, v in columns.items()}
    arrays["partial"] = np.zeros(steps, bool)
    if not (arrays["terminated"][-1] or arrays["truncated"][-1]):
        arrays["truncated"][-1] = arrays["partial"][-1] = True  # the last episode was cut by the budget
    return arrays


def vector_rollout(env_id: str, env_kwargs: dict[str, Any], act: Any, steps: int, noise: float, seed: int, progress: bool,
                   label: str, envs: int) -> dict[str, np.ndarray]:  # fmt: skip
    """``rollout`` on ``envs`` environments stepped together (gymnasium's sync vector env, seeds ``seed`` to
    ``seed + envs - 1``), the policy acting on their batch of observations and the exploration drawn for the batch.
    Each env's transitions are stored one env after another, so episodes stay contiguous; an episode's last
    ``next_observation`` is its final one (autoreset in the same step), and each env's last transition is marked
    truncated (and ``partial``) when its episode is still running. The transitions differ from a one-env collection
    of the same seed."""
    import gymnasium as gym
    from tqdm import tqdm

    with env_errors(env_id, env_kwargs, "dataset collection"):
        vector = gym.vector.SyncVectorEnv([lambda: make_checked(env_id, env_id, **env_kwargs) for _ in range(envs)],
                                          autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)  # fmt: skip
    space = vector.single_action_space
    space.seed(seed)
    rng = np.random.default_rng(seed)
    counts = [steps // envs + (i < steps % envs) for i in range(envs)]  # each env's share of the transitions
    columns: dict[str, list[Any]] = {k: [] for k in TRANSITION_KEYS}  # one [envs, ...] batch per vector step
    observations, _ = vector.reset(seed=seed)
    try:
        for _ in tqdm(range(counts[0]), unit="step", desc=label, disable=not progress, leave=False, unit_scale=envs):
            observations = np.asarray(observations, dtype=np.float32)
            actions = np.stack([space.sample() for _ in range(envs)]) if act is None else behaviour_actions(act, space, observations, noise, rng)
            next_observations, rewards, terminated, truncated, info = vector.step(actions)
            final = next_observations.copy()
            for i in np.flatnonzero(terminated | truncated):
                final[i] = info["final_obs"][i]
            for key, value in zip(TRANSITION_KEYS, (observations, actions, rewards, final, terminated, truncated)):
                columns[key].append(value)
            observations = next_observations
    finally:
        vector.close()
    batched = {key: np.stack(values, axis=1) for key, values in columns.items()}  # [envs, steps, ...]: env-major
    parts = []
    for i, count in enumerate(counts):
        if not count:
            continue
        arrays = {key: value[i, :count] for key, value in batched.items()}
        arrays["partial"] = np.zeros(count, bool)
        if not (arrays["terminated"][-1] or arrays["truncated"][-1]):
            arrays["truncated"][-1] = arrays["partial"][-1] = True
        parts.append(arrays)
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def behaviour_actions(act: Any, space: Any, observations: np.ndarray, noise: float, rng: np.random.Generator) -> np.ndarray:
    """``behaviour_action`` for a batch: the policy's deterministic actions, each replaced by a uniform one with
    probability ``noise`` (discrete) or given Gaussian noise of ``noise`` x half the range and clipped (continuous)."""
    import gymnasium as gym

    rows = len(observations)
    chosen = np.asarray(act(observations))
    if isinstance(space, gym.spaces.Discrete):
        chosen = chosen.reshape(rows).astype(np.int64)
        if noise:
            explore = rng.random(rows) < noise
            chosen = np.where(explore, rng.integers(space.n, size=rows), chosen)
        return chosen
    chosen = chosen.astype(np.float64).reshape((rows, *space.shape))
    if noise:
        chosen = chosen + rng.normal(0.0, 1.0, size=chosen.shape) * (noise * (space.high - space.low) / 2.0)
    return np.clip(chosen, space.low, space.high).astype(space.dtype)


# ---- commands -----------------------------------------------------------------------------------


def open_policy_run(session: Any, run_dir: str | Path, env_id: str | None = None) -> Build:
    from ..runs import open_run

    build = open_run(session, Path(run_dir))
    note = build.extras["saved_run"].note
    if note:  # previous.pt stood in for a missing or corrupt latest.pt
        import sys

        print(f"rlplug: note: {note}", file=sys.stderr)
    if env_id is not None and build.env_id != env_id:
        build.trainer.close()
        raise DatasetError(f"run {run_dir} was trained on {build.env_id}, not {env_id}")
    return build


def check_behaviour_policy(build: Build, run_dir: str | Path) -> None:
    """The rollout acts one observation at a time on the env's own observations: a recurrent policy (its state is
    not carried there) or one trained with ``hide_observation`` would act on what it was not trained on."""
    hidden = list(getattr(build.recipe, "hide_observation", None) or ())
    if build.trainer.recurrent_state_shape is None and not hidden:
        return
    what = "a recurrent policy" if build.trainer.recurrent_state_shape is not None else f"observation indices {hidden} hidden"
    raise DatasetError(
        f"run {run_dir} was trained with {what}; dataset collect rolls out feed-forward policies of the env's full "
        f"observation ({build.env_id}); collect with another run, or none for a random dataset"
    )


def reference_returns(env_id: str, env_kwargs: dict[str, Any], expert: Build | None, seed: int, how: str) -> dict[str, Any]:
    reference: dict[str, Any] = {"random_return": random_return(env_id, env_kwargs, REFERENCE_EPISODES, seed), "episodes": REFERENCE_EPISODES}
    if expert is not None:
        reference["expert_return"] = float(np.mean(expert.trainer.evaluate(REFERENCE_EPISODES)))
        reference["expert"] = how
    return reference


def run_source(build: Build, run_dir: str | Path) -> dict[str, Any]:
    return {"run": str(run_dir), "recipe": build.recipe.ref, "algorithm": build.algorithm.name,
            "backend": build.backend, "trained_steps": build.trainer.progress}


def collect(
    session: Any,
    name: str,
    env_id: str,
    *,
    policy_run: str | Path | None = None,
    expert_run: str | Path | None = None,
    noise: float = 0.0,
    steps: int = 100_000,
    seed: int = 0,
    overwrite: bool = False,
    progress: bool = True,
    extra_source: dict[str, Any] | None = None,
    progress_label: str = "collecting",
    envs: int = 1,
) -> DatasetInfo:
    """Roll out ``policy_run``'s policy (``None``: a uniformly random policy) for ``steps`` transitions.

    The expert reference is ``expert_run``'s deterministic return, or ``policy_run``'s when no expert
    is named (say so with ``--expert`` for a medium dataset); a random dataset without an expert has
    no normalised score. ``envs`` > 1 steps that many envs together (``vector_rollout``: other transitions).
    """
    if steps < 1:
        raise DatasetError(f"--steps must be at least 1, got {steps}")
    if not 0.0 <= noise <= 1.0:
        raise DatasetError(f"--noise must be in [0, 1], got {noise}")
    if envs < 1:
        raise DatasetError(f"--envs (a declaration's collect_envs) must be at least 1, got {envs}")
    with writing_dataset(name):  # held until it is written: a second collect of this name is refused, not raced
        check_target(name, overwrite)
        return _collect(session, name, env_id, policy_run, expert_run, noise, steps, seed, overwrite, progress, extra_source,
                        progress_label, envs)  # fmt: skip


def _collect(session: Any, name: str, env_id: str, policy_run: str | Path | None, expert_run: str | Path | None, noise: float,
             steps: int, seed: int, overwrite: bool, progress: bool, extra_source: dict[str, Any] | None,
             progress_label: str, envs: int) -> DatasetInfo:  # fmt: skip
    env_kwargs: dict[str, Any] = {}
    with env_errors(env_id, env_kwargs, "dataset collect --env"):
        observation_space, action_space = probe_spaces(env_id, env_kwargs)
    opened: list[Build] = []
    try:
        policy = open_policy_run(session, policy_run, env_id) if policy_run else None
        if policy is not None:
            opened.append(policy)
            check_behaviour_policy(policy, policy_run)
        expert = open_policy_run(session, expert_run, env_id) if expert_run else None
        if expert is not None:
            opened.append(expert)
        act = policy.trainer.act_deterministic if policy is not None else None
        arrays = rollout(env_id, env_kwargs, act, steps, noise, seed, progress, progress_label, envs)
        source: dict[str, Any] = {"kind": "policy" if policy is not None else "random", "noise": noise, "seed": seed, "steps": steps}
        if envs > 1:
            source["envs"] = envs
        if policy is not None:
            source.update(run_source(policy, policy_run))
        source.update(extra_source or {})
        how = f"run {expert_run}" if expert is not None else f"the behaviour policy's run {policy_run} (no --expert given)"
        reference = reference_returns(env_id, env_kwargs, expert or policy, seed, how)
        if expert is not None:
            reference["expert_source"] = run_source(expert, expert_run)
    finally:
        for build in opened:
            build.trainer.close()
    return write(name, arrays, env_id=env_id, env_kwargs=env_kwargs, observation_space=observation_space,
                 action_space=action_space, source=source, reference=reference, overwrite=overwrite)


def from_run(session: Any, run_dir: str | Path, name: str, *, expert_run: str | Path | None = None, seed: int = 0, overwrite: bool = False) -> DatasetInfo:
    """A training run's replay memory as a dataset (D4RL's medium-replay kind of data)."""
    with writing_dataset(name):
        check_target(name, overwrite)
        return _from_run(session, run_dir, name, expert_run, seed, overwrite)


def _from_run(session: Any, run_dir: str | Path, name: str, expert_run: str | Path | None, seed: int, overwrite: bool) -> DatasetInfo:
    opened: list[Build] = []
    try:
        build = open_policy_run(session, run_dir)
        opened.append(build)
        if build.algorithm.kind == "multi-agent":
            raise DatasetError(
                f"run {run_dir} ({build.algorithm.name}/{build.backend}) trained on the multi-agent environment "
                f"'{build.env_id}'; rlplug's datasets hold one agent's transitions"
            )
        try:
            arrays = build.trainer.replay_transitions()
        except NoReplayMemoryError:
            raise DatasetError(
                f"run {run_dir} ({build.algorithm.name}/{build.backend}) keeps no replay memory; "
                "from-run needs an off-policy run (sac, td3 or dqn)"
            ) from None
        expert = open_policy_run(session, expert_run, build.env_id) if expert_run else None
        if expert is not None:
            opened.append(expert)
        how = f"run {expert_run}" if expert is not None else f"the run's own final policy ({run_dir}; no --expert given)"
        reference = reference_returns(build.env_id, build.env_kwargs, expert or build, seed, how)
        source = {"kind": "replay", **run_source(build, run_dir)}
        returns = episode_returns(arrays["reward"], arrays["terminated"], arrays["truncated"], arrays.get("partial"))
        if not returns:
            raise DatasetError(f"run {run_dir}'s replay memory holds no complete episode")
        return write(name, arrays, env_id=build.env_id, env_kwargs=build.env_kwargs, observation_space=build.observation_space,
                     action_space=build.action_space, source=source, reference=reference, overwrite=overwrite)
    finally:
        for opened_build in opened:
            opened_build.trainer.close()


# ---- declared datasets ----------------------------------------------------------------------------


def declared(session: Any, name: str) -> dict[str, Any]:
    """A ``[datasets.NAME]`` table, checked and with defaults filled in."""
    from ..schema import check_type
    from ..util.suggest import did_you_mean

    tables = session.book.datasets
    if name not in tables:
        raise DatasetError(f"no dataset '{name}' is declared" + did_you_mean(name, tables) + "; declared: " + (", ".join(sorted(tables)) or "none"))
    table = dict(tables[name])
    where = f"dataset '{name}' in {table.get('source', '?')}"
    out = {}
    known = {**{key: kind for key, (kind, _) in DECLARED_FIELDS.items()}, **OPTIONAL_FIELDS}
    for key, value in table.items():
        if key not in known:
            raise DatasetError(f"{where}: unknown field '{key}'" + did_you_mean(key, known))
        try:
            out[key] = check_type(value, known[key], f"'{key}'")
        except TypeError as err:
            raise DatasetError(f"{where}: {err}") from None
    for key, (_, default) in DECLARED_FIELDS.items():
        if key not in out:
            if default is None:
                raise DatasetError(f"{where}: missing required field '{key}'")
            out[key] = default
    return out


def _prepared(session: Any, recipe: str, backend: str, steps: int, seed: int) -> Build:
    overrides = [f"seed={seed}"] + ([f"steps={steps}"] if steps else [])
    return session.prepare(recipe, backend, overrides)  # resolved and checked, nothing constructed yet


STOPPED_EARLY = "stopped_early.json"
"""Written in a behaviour policy's run copied from its expert's: the ``policy_steps`` it was asked to stop at."""


def _finished(run_dir: Path, form: tuple[Any, Any], *, stopped_at: int | None = None, reached: int | None = None) -> bool:
    """``run_dir`` is a finished run of the resolved recipe ``form``: a copy of one stopped at ``stopped_at``, or one
    that trained to at least ``reached`` steps (a run resumed to its budget and interrupted keeps the summary of the
    shorter run it resumed), when given."""
    if not (run_dir / "summary.json").is_file() or _trained_from(run_dir) != form:
        return False
    if reached is not None and read_json_object(run_dir / "summary.json", DatasetError).get("steps", 0) < reached:
        return False
    if stopped_at is None:
        return True
    marker = run_dir / STOPPED_EARLY
    return marker.is_file() and read_json_object(marker, DatasetError).get("policy_steps") == stopped_at


def _clear(run_dir: Path) -> None:
    """Remove an interrupted earlier build's run, or one from another declaration (steps, seed, recipe)."""
    if not run_dir.exists():
        return
    from ..errors import RunDirBusyError
    from ..runs.lock import busy_message, holder

    pid = holder(run_dir)
    if pid is not None:  # another `dataset build` is training it right now
        raise RunDirBusyError(busy_message(run_dir, pid))
    shutil.rmtree(run_dir)


def _trained_run(session: Any, recipe: str, backend: str, steps: int, seed: int, run_dir: Path, progress: bool,
                 label: str | None = None) -> Path:  # fmt: skip
    """Train ``recipe`` into ``run_dir`` unless a finished run of the same resolved recipe is already there."""
    from ..runs import train

    prepared = _prepared(session, recipe, backend, steps, seed)
    if _finished(run_dir, _recorded_form(prepared)):
        return run_dir
    _clear(run_dir)
    build = session.construct(prepared)
    try:
        train(build, run_dir=run_dir, progress=progress, progress_label=label)
    finally:
        build.trainer.close()
    return run_dir


def _expert_with_snapshot(session: Any, recipe: str, backend: str, policy_steps: int, expert_steps: int, seed: int,
                          policy_dir: Path, expert_dir: Path, progress: bool, name: str) -> None:  # fmt: skip
    """Train the expert and keep its run as it stood at ``policy_steps`` as the behaviour policy: one training
    instead of two, and D4RL's "medium" policy (the expert's own training stopped early).

    The run stops at ``policy_steps``, is copied to ``policy_dir``, and resumes to ``expert_steps`` from that
    checkpoint (resuming is exact: the conformance kit checks it), so the expert is the run it always was. For
    a recipe whose training does not depend on its budget (no schedule over the steps) the behaviour policy
    is too; with a schedule it is the schedule's state at ``policy_steps``, which is what stopping early means.
    """
    from ..runs import open_run, train

    prepared = _prepared(session, recipe, backend, expert_steps, seed)
    form = _recorded_form(prepared)
    if _finished(expert_dir, form, reached=expert_steps) and _finished(policy_dir, form, stopped_at=policy_steps):
        return
    _clear(expert_dir)
    _clear(policy_dir)
    every = max(1, prepared.recipe.steps // 10)  # as a run of the expert's budget checkpoints
    build = session.construct(prepared)
    try:
        train(build, steps=policy_steps, run_dir=expert_dir, progress=progress, checkpoint_every=every,
              progress_label=f"{name} 1/3 behaviour policy")  # fmt: skip
    finally:
        build.trainer.close()
    shutil.copytree(expert_dir, policy_dir)
    (policy_dir / STOPPED_EARLY).write_text(json.dumps({"policy_steps": policy_steps, "expert_run": str(expert_dir)}) + "\n")
    build = open_run(session, expert_dir)
    try:
        train(build, run_dir=expert_dir, progress=progress, resume=True, progress_label=f"{name} 2/3 expert")
    finally:
        build.trainer.close()


_DESCRIBING_FIELDS = ("description", "target", "target_metric", "beat_dataset", "eval_episodes", "tier", "reference")
"""Recipe fields that do not change what trains: editing them keeps a finished run."""


def _training_form(backend: Any, table: Any) -> tuple[Any, Any]:
    if not isinstance(table, dict):
        return backend, table
    return backend, {k: v for k, v in table.items() if k not in _DESCRIBING_FIELDS}


def _recorded_form(build: Build) -> tuple[Any, Any]:
    """The backend and resolved recipe as a run's recipe.json records them (JSON types: lists, not tuples)."""
    return _training_form(build.backend, json.loads(json.dumps(build.recipe.to_table(), default=str)))


def _trained_from(run_dir: Path) -> tuple[Any, Any] | None:
    try:
        recorded = read_json_object(run_dir / "recipe.json", DatasetError)
    except DatasetError:
        return None  # unreadable: train it again
    return _training_form(recorded.get("backend"), recorded.get("recipe"))


def build_declared(session: Any, name: str, *, progress: bool = True, overwrite: bool = False, log: Any = print) -> DatasetInfo:
    """Train the declared behaviour policy and expert (reusing finished runs), then collect.

    Runs go to ``<data root>/_runs/NAME-policy`` and ``NAME-expert``; the same declaration and seed
    give the same dataset on the same machine and library versions.
    """
    spec = declared(session, name)
    runs = data_root() / "_runs"
    expert_recipe = spec["expert"] or spec["policy"]
    own_expert = (expert_recipe, spec["expert_steps"]) == (spec["policy"], spec["policy_steps"])
    phases = 2 if own_expert else 3  # the progress bars say which phase of how many
    policy_dir, expert_dir = runs / f"{name}-policy", runs / f"{name}-expert"
    stops_early = _stops_early(session, spec, expert_recipe)
    if stops_early:
        log(f"dataset {name}: training the expert reference ({expert_recipe}, {stops_early} steps); its run at "
            f"{spec['policy_steps']} steps is the behaviour policy")  # fmt: skip
        _expert_with_snapshot(session, expert_recipe, spec["policy_backend"], spec["policy_steps"], stops_early, spec["seed"],
                              policy_dir, expert_dir, progress, name)  # fmt: skip
    else:
        log(f"dataset {name}: training the behaviour policy ({spec['policy']}, {spec['policy_steps'] or 'recipe'} steps)")
        _trained_run(session, spec["policy"], spec["policy_backend"], spec["policy_steps"], spec["seed"], policy_dir, progress,
                     f"{name} 1/{phases} behaviour policy")  # fmt: skip
    if own_expert:
        log(f"dataset {name}: the behaviour policy is also the expert reference (trained once)")
        expert_dir = policy_dir
    elif not stops_early:
        log(f"dataset {name}: training the expert reference ({expert_recipe}, {spec['expert_steps'] or 'recipe'} steps)")
        _trained_run(session, expert_recipe, spec["policy_backend"], spec["expert_steps"], spec["seed"], expert_dir, progress,
                     f"{name} 2/3 expert")  # fmt: skip
    log(f"dataset {name}: collecting {spec['steps']} transitions")
    info = collect(session, name, spec["env"], policy_run=policy_dir, expert_run=expert_dir, noise=spec["noise"],
                   steps=spec["steps"], seed=spec["seed"], overwrite=overwrite, progress=progress,
                   extra_source={"declared": spec.get("source", ""), "description": spec["description"]},
                   progress_label=f"{name} {phases}/{phases} collecting", envs=spec["collect_envs"])  # fmt: skip
    warning = drift(name, spec, info)
    if warning:
        log(f"rlplug: warning: {warning}")
    return info


def _stops_early(session: Any, spec: dict[str, Any], expert_recipe: str) -> int:
    """The expert's step budget when the behaviour policy is the same recipe stopped earlier (then one run gives
    both), else 0."""
    if expert_recipe != spec["policy"] or not spec["policy_steps"]:
        return 0
    expert_steps = spec["expert_steps"] or _prepared(session, expert_recipe, spec["policy_backend"], 0, spec["seed"]).recipe.steps
    return expert_steps if spec["policy_steps"] < expert_steps else 0


def drift(name: str, spec: dict[str, Any], info: DatasetInfo) -> str | None:
    """Why this build is not the dataset its recipes were verified on (its mean return is off the declared
    ``verified_return`` by more than 1 %), or ``None``. Builds are deterministic for one version of the code,
    but the behaviour policy is trained, and a change to its training path trains a different one."""
    verified = spec.get("verified_return")
    built = (info.metadata.get("returns") or {}).get("mean")
    if verified is None or built is None or abs(built - verified) <= 0.01 * abs(verified) + 0.1:
        return None
    return (f"dataset {name}: this build's mean return is {built:.1f}, the recipes on it were verified on a build with "
            f"{verified:.1f} (the behaviour policy trained differently): their targets may not hold; re-verify them with rlplug bench")
