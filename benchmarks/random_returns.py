"""The return of a uniformly random policy on each recipe's environment: the 0 of BENCHMARKS.md's normalised scores.

Every first-party recipe's environment (registry.toml) is made with rlplug's own factory and its evaluation
protocol (``rlplug.envs.evaluation``: the recipe's wrappers without reward clipping or normalisation, the env's own
time limit, episode ``i`` reset with seed ``seed + 10000 + i``); actions are drawn uniformly from the action
space (a generator seeded ``seed``). Multi-agent recipes (``mpe:``, ``vmas:``) run through
``rlplug.envs.multiagent``'s evaluation, which scores an episode as the agents' returns averaged over agents, as the
bench does. Offline recipes (``target_metric = "normalised_score"``) are already normalised against their
dataset's random and expert returns and are listed as skipped; so are environments whose suite is not
installed, and environment ids that two recipes wrap differently.

    python benchmarks/random_returns.py                       # 20 episodes each, writes results/random_returns.json
    python benchmarks/random_returns.py --episodes 5 --out /tmp/r.json
    python benchmarks/random_returns.py --zoo zoo:dqn/Acrobot-v1 zoo:ppo/Swimmer-v4 --out results/random_returns_zoo.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "random_returns.json"


def online_recipes(zoo: list[str]) -> tuple[dict[str, list[Any]], dict[str, str]]:
    """The first-party recipes (or, given ``zoo`` names, those Zoo recipes) scored on their return, grouped by
    environment id; and the skipped ones, with why."""
    from rlplug.recipes.book import RecipeBook
    from rlplug.recipes.files import first_party_registry

    book = RecipeBook()
    book.add_file(first_party_registry())
    by_env: dict[str, list[Any]] = {}
    skipped: dict[str, str] = {}
    refs = zoo or [f"{name}@{version}" for name, version in book.refs()]
    for ref in refs:
        recipe = book.resolve(ref)
        if recipe.target_metric == "normalised_score":
            skipped[recipe.ref] = "offline: its normalised score already has the random return at 0"
        else:
            by_env.setdefault(recipe.env, []).append(recipe)
    return by_env, skipped


def env_setup(recipe: Any) -> tuple[Any, ...]:
    """What decides the random return besides the id: constructor arguments and wrapper fields."""
    return (json.dumps(recipe.env_kwargs, sort_keys=True), recipe.env_module, recipe.frame_stack, recipe.atari,
            recipe.terminal_on_life_loss, recipe.clip_actions, recipe.time_limit)  # fmt: skip


def random_single_agent_returns(recipe: Any, episodes: int, seed: int) -> list[float]:
    import numpy as np

    from rlplug.envs.factory import make_gym_env
    from rlplug.envs.spec import EnvSpec
    from rlplug.envs.evaluation import evaluate_policy

    spec = EnvSpec.from_recipe(recipe)
    probe = make_gym_env(spec, training=False)
    space = probe.action_space
    probe.close()
    space.seed(seed)

    def act(_observation: Any) -> np.ndarray:
        return np.asarray(space.sample())[None]

    return evaluate_policy(spec, None, act, episodes, seed)


def random_multiagent_returns(recipe: Any, episodes: int, seed: int) -> list[float]:
    import gymnasium as gym
    import numpy as np

    from rlplug.envs.multiagent import probe_multiagent_spaces
    from rlplug.envs.multiagent_evaluation import evaluate_multiagent

    spaces = probe_multiagent_spaces(recipe.env, dict(recipe.env_kwargs))
    space, agents = spaces.action_space, spaces.n_agents
    rng = np.random.default_rng(seed)

    def act(observations: np.ndarray) -> np.ndarray:
        batch = observations.shape[0]
        if isinstance(space, gym.spaces.Discrete):
            return rng.integers(0, int(space.n), size=(batch, agents))
        return rng.uniform(space.low, space.high, size=(batch, agents, *space.shape)).astype(np.float32)

    return evaluate_multiagent(recipe.env, dict(recipe.env_kwargs), act, episodes, seed)


def measure(recipe: Any, episodes: int, seed: int) -> dict[str, Any]:
    from rlplug.envs.multiagent import is_multiagent_env

    measured = random_multiagent_returns if is_multiagent_env(recipe.env) else random_single_agent_returns
    returns = measured(recipe, episodes, seed)
    return {"mean": round(statistics.fmean(returns), 3), "std": round(statistics.stdev(returns), 3) if len(returns) > 1 else 0.0,
            "episodes": len(returns)}  # fmt: skip


def suite_missing(env_id: str) -> str | None:
    """Why the env cannot be made here (its suite or package is not installed), or ``None``."""
    from rlplug.envs.suites import register_suite, suite_available, suite_of
    from rlplug.envs.multiagent import is_multiagent_env, parse_env_id

    if is_multiagent_env(env_id):
        module = {"mpe": "mpe2", "vmas": "vmas"}[parse_env_id(env_id)[0]]
        import importlib.util

        return None if importlib.util.find_spec(module) else f"needs the '{module}' package, not installed"
    register_suite(env_id)
    suite = suite_of(env_id)
    if suite is not None and not suite_available(suite):
        return f"needs {suite.label} (pip install 'rlplug[{suite.extra}]'), not installed"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--zoo", nargs="+", default=[], metavar="zoo:ALGO/ENV",
                        help="measure the environments of these Zoo recipes instead of the first-party ones")
    args = parser.parse_args()
    by_env, skipped = online_recipes(args.zoo)
    data: dict[str, Any] = {}
    for env_id, recipes in sorted(by_env.items()):
        names = [r.ref for r in recipes]
        if len({env_setup(r) for r in recipes}) > 1:
            for name in names:
                skipped[name] = f"the recipes on {env_id} ({', '.join(names)}) wrap it differently; measure them apart"
            continue
        why = suite_missing(env_id)
        if why:
            for name in names:
                skipped[name] = f"{env_id} {why}"
            continue
        data[env_id] = {**measure(recipes[0], args.episodes, args.seed), "recipes": names}
        print(f"{env_id}: {data[env_id]['mean']:.2f} ± {data[env_id]['std']:.2f} over {args.episodes} episodes", file=sys.stderr)
    for name, why in sorted(skipped.items()):
        print(f"skipped {name}: {why}", file=sys.stderr)
    command = "python benchmarks/random_returns.py" + (f" --episodes {args.episodes}" if args.episodes != 20 else "") + (
        f" --seed {args.seed}" if args.seed else "") + (f" --zoo {' '.join(args.zoo)}" if args.zoo else "")
    envelope = {"command": command, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "protocol": f"uniform random actions, {args.episodes} episodes of rlplug's evaluation env reset with seeds "
                            f"{args.seed + 10_000}..{args.seed + 10_000 + args.episodes - 1}",
                "data": data, "skipped": dict(sorted(skipped.items()))}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(envelope, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
