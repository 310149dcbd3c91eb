"""Action masks side by side: PPO and DQN on both backends learn the masked env with its mask and without it.

The env is the tests' ``tiny_envs:TinyMasked-v0`` with 16 states (shown one-hot) and 10 actions, of which 3 are
valid in each state and one pays 1; an invalid action ends the episode with no reward; 20 steps, so the best
return is 20, a random policy's about 6.7 with the mask and 0.07 without. Each run trains the recipe
(``ppo-cartpole`` / ``dqn-cartpole`` with the small settings below) with ``action_mask = "auto"`` (the mask
honoured) and with ``action_mask = "ignore"`` (the same env, its mask dropped from the observation: invalid
actions must be learned from the reward), and evaluates the deterministic policy (``--episodes`` episodes) every
``--every`` steps. Stores ``benchmarks/results/action-masks.json`` (every run's curve) and ``.md`` (per backend,
algorithm and condition: the mean evaluation return over seeds at each checkpoint, its mean over the checkpoints
(the area under the curve, per checkpoint), the final return, and the first checkpoint at which the mean reached
``--reach``).

    python benchmarks/action_masks.py [--backends skrl,torchrl] [--seeds 0,1,2] [--steps 8192] [--every 1024]
                                      [--episodes 5] [--reach 19] [--out benchmarks/results/action-masks]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = "tiny_envs:TinyMasked-v0"
ENV_KWARGS = "env_kwargs={states = 32, actions = 16}"
SETTINGS = {
    "ppo": ("ppo-cartpole", ["num_envs=4", "rollout_steps=64", "minibatches=4", "epochs=4", "hidden_sizes=[32]",
                             "learning_rate=0.003", "lr_schedule=constant"]),
    "dqn": ("dqn-cartpole", ["num_envs=1", "learning_starts=256", "train_every=4", "utd_ratio=0.25", "batch_size=32",
                             "buffer_size=10000", "epsilon_decay_steps=2000", "epsilon_end=0.05", "target_update=hard",
                             "target_update_period=100", "learning_rate=0.001", "lr_schedule=constant",
                             "hidden_sizes=[32]", "log_every=256"]),
}  # fmt: skip
CONDITIONS = {"masked": "auto", "ignored": "ignore"}


def run(backend: str, algorithm: str, condition: str, seed: int, steps: int, every: int, episodes: int) -> dict:
    import torch

    import rlplug

    torch.set_num_threads(1)
    recipe, overrides = SETTINGS[algorithm]
    overrides = [f"env={ENV}", ENV_KWARGS, f"action_mask={CONDITIONS[condition]}", f"seed={seed}", f"steps={steps}", *overrides]
    build = rlplug.build(recipe, backend=backend, overrides=overrides)
    curve, started = [], time.perf_counter()
    try:
        checkpoint = 0
        while checkpoint < steps:
            checkpoint = min(steps, checkpoint + every)
            build.trainer.train(checkpoint)
            curve.append({"steps": build.trainer.env_steps, "return": statistics.fmean(build.trainer.evaluate(episodes))})
    finally:
        build.trainer.close()
    return {"backend": backend, "algorithm": algorithm, "condition": condition, "seed": seed, "recipe": recipe,
            "overrides": overrides, "wall_s": round(time.perf_counter() - started, 2), "curve": curve}  # fmt: skip


def summarise(runs: list[dict], reach: float) -> list[dict]:
    """Per (backend, algorithm, condition): the mean return over seeds at each checkpoint, its final std, and the
    first checkpoint where the mean reached ``reach`` (``None``: never within the budget)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["backend"], r["algorithm"], r["condition"]), []).append(r)
    rows = []
    for (backend, algorithm, condition), members in groups.items():
        steps = [point["steps"] for point in members[0]["curve"]]
        means = [statistics.fmean(m["curve"][i]["return"] for m in members) for i in range(len(steps))]
        finals = [m["curve"][-1]["return"] for m in members]
        reached = next((s for s, mean in zip(steps, means) if mean >= reach), None)
        rows.append({"backend": backend, "algorithm": algorithm, "condition": condition, "seeds": len(members),
                     "steps": steps, "mean_return": [round(v, 2) for v in means], "final_mean": round(statistics.fmean(finals), 2),
                     "final_std": round(statistics.pstdev(finals), 2), "steps_to_reach": reached,
                     "curve_mean": round(statistics.fmean(means), 2),
                     "wall_s": round(sum(m["wall_s"] for m in members), 1)})  # fmt: skip
    return rows


def markdown(rows: list[dict], command: str, reach: float) -> str:
    steps = rows[0]["steps"]
    head = "| backend | algorithm | mask | " + " | ".join(f"{s}" for s in steps) + f" | curve mean | final (mean ± std) | steps to {reach:g} | wall s |"
    lines = [
        "# Action masks side by side",
        "",
        f"`{command}`",
        "",
        f"`{ENV}` with `{ENV_KWARGS}` (best return 20; random ≈ 6.7 with the mask, 0.07 without). Mean deterministic evaluation return over "
        f"seeds at each step count; `masked`: the mask honoured (`action_mask = \"auto\"`), `ignored`: the same env with "
        "its mask dropped (`action_mask = \"ignore\"`), invalid actions learned from the episode ending.",
        "",
        head,
        "|" + "---|" * (len(steps) + 7),
    ]
    for r in rows:
        reached = "—" if r["steps_to_reach"] is None else str(r["steps_to_reach"])
        values = " | ".join(f"{v:.1f}" for v in r["mean_return"])
        lines.append(f"| {r['backend']} | {r['algorithm']} | {r['condition']} | {values} | {r['curve_mean']:.1f} | {r['final_mean']:.1f} ± "
                     f"{r['final_std']:.1f} | {reached} | {r['wall_s']:.0f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="skrl,torchrl")
    parser.add_argument("--algorithms", default="ppo,dqn")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--steps", type=int, default=8192)
    parser.add_argument("--every", type=int, default=1024)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--reach", type=float, default=19.0)
    parser.add_argument("--out", default=str(HERE / "results" / "action-masks"))
    args = parser.parse_args()
    sys.path.insert(0, str(HERE.parent / "tests"))  # tiny_envs: the tests' own environments
    runs = []
    for backend in args.backends.split(","):
        for algorithm in args.algorithms.split(","):
            for condition in CONDITIONS:
                for seed in (int(s) for s in args.seeds.split(",")):
                    runs.append(run(backend, algorithm, condition, seed, args.steps, args.every, args.episodes))
                    last = runs[-1]
                    print(f"{backend} {algorithm} {condition} seed {seed}: {[p['return'] for p in last['curve']]} "
                          f"({last['wall_s']} s)", file=sys.stderr, flush=True)
    rows = summarise(runs, args.reach)
    from rlplug.util.commands import portable_command, repository_root

    command = portable_command(["python", "benchmarks/action_masks.py", *sys.argv[1:]], repository_root())
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"section": "action_masks", "command": command.strip(),
                                                    "date": time.strftime("%Y-%m-%d"), "data": {"rows": rows, "runs": runs}},
                                                   indent=1) + "\n")  # fmt: skip
    out.with_suffix(".md").write_text(markdown(rows, command.strip(), args.reach))
    print(markdown(rows, command.strip(), args.reach))


if __name__ == "__main__":
    main()
