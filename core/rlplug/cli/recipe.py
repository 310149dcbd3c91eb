"""``rlplug recipe from-skrl FILE.yaml --env ID``: a recipe from a skrl Runner file (``rlplug.interop.skrl_runner``)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..errors import RecipeError


def add_recipe_parser(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    recipe = sub.add_parser("recipe", help="write recipes from other libraries' configs")
    rsub = recipe.add_subparsers(dest="recipe_command", required=True, metavar="ACTION")
    skrl = rsub.add_parser("from-skrl", parents=[common], help="a recipe from a skrl Runner YAML file (PPO, SAC)")
    skrl.add_argument("file", metavar="FILE.yaml", help="the skrl Runner file (models, memory, agent, trainer)")
    skrl.add_argument("--env", required=True, help="the Gymnasium id the recipe trains on (a Runner file names none)")
    skrl.add_argument("--num-envs", type=int, default=1, help="vectorised environments (skrl's timesteps and "
                      "memory_size are per environment; default 1)")
    skrl.add_argument("--name", help="the recipe's name (default: the file's name)")
    skrl.add_argument("--out", metavar="FILE.toml", help="write the recipe file here (default: print it)")
    skrl.set_defaults(func=cmd_from_skrl)


def cmd_from_skrl(args: argparse.Namespace) -> int:
    from ..recipes.overrides import check_option
    from ..interop.skrl_runner import read_runner_file, recipe_text, translate_runner

    num_envs = check_option("num_envs", args.num_envs, "--num-envs")
    name = args.name or re.sub(r"[^\w.+-]", "-", Path(args.file).stem).strip("-_") or "skrl-runner"
    out = Path(args.out) if args.out else None
    if out is not None and out.exists():
        raise RecipeError(f"--out {out} exists; choose another file (nothing was written)")
    table, lines = translate_runner(read_runner_file(args.file), args.env, name, num_envs, source=args.file)
    text = recipe_text(table, name, lines)
    if out is None:
        print(text, end="")
    else:
        out.write_text(text, encoding="utf-8")
        print(f"wrote recipe '{name}' to {out}: rlplug train {name} --recipes {out}")
    return 0
