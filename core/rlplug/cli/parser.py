"""The argument parser: every command, its options, and the function that runs it."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable
from typing import NoReturn

from ..errors import RlplugError
from ..recipes.overrides import parse_value


class Parser(argparse.ArgumentParser):
    """argparse with rlplug's error format: ``rlplug: error: train: argument --steps: expected one argument
    (see `rlplug train --help`)`` as ONE line and exit 2, instead of the usage block. Subcommands inherit it."""

    def error(self, message: str) -> NoReturn:
        message = " ".join(str(message).split())
        choice = re.fullmatch(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            from ..util.suggest import did_you_mean

            options = re.findall(r"'([^']*)'", choice.group(3))
            message = f"argument {choice.group(1)}: invalid choice '{choice.group(2)}'" + did_you_mean(choice.group(2), options)
        self.fail(message, self.prog)

    def fail(self, message: str, prog: str) -> NoReturn:
        command = prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        self.exit(2, f"rlplug: error: {where}{message} (see `{prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def]
        """Unknown arguments are reported by the command they were given to (``train``), not by ``rlplug``."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            hint = ""
            flag = next((e.split("=", 1)[0] for e in extras if e.startswith("--")), None)
            if flag:
                from ..util.suggest import did_you_mean

                close = did_you_mean(flag, getattr(parsed, "command_options", ()))
                hint = close if "did you mean" in close else ""
            self.fail(f"unrecognized arguments: {' '.join(extras)}{hint}", getattr(parsed, "command_prog", self.prog))
        return parsed


def option_value(text: str) -> object:
    """A number option (``--steps 1e6``, ``--seed 7``) read as ``--set`` reads values, so that any text reaches
    the option's domain check (``rlplug.recipes.overrides.check_option``) and is refused there in its words."""
    try:
        return parse_value(text)
    except RlplugError as err:  # nested past the limit: the parser's own one-line refusal
        raise argparse.ArgumentTypeError(str(err)) from None



def command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """``rlplug.cli.<module>.<name>``, imported when the command runs: `rlplug list` does not pay for the
    imports of train, bench or the run layer (about half of its start-up when they were imported here)."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(f"{__package__}.{module}"), name)(args)

    run.__name__ = name
    return run


def build_parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the full traceback of an unexpected error")
    common.add_argument("--plugin", action="append", metavar="MODULE[:OBJ]", help="import a module (or an object in it) and register it as a plugin")
    common.add_argument("--recipes", action="append", metavar="FILE", help="add the recipes in a TOML file")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    debug_only = Parser(add_help=False)
    debug_only.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    parser = Parser(prog="rlplug", description="Train RL algorithms from named recipes on skrl or TorchRL.")
    parser.add_argument("--version", action="version", version="rlplug 0.1.0")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("list", parents=[common], help="algorithms x backends, with plugin and version").set_defaults(func=command("catalog", "cmd_list"))
    recipes = sub.add_parser("recipes", parents=[common], help="known recipes")
    recipes.add_argument("--zoo", action="store_true", help="RL Baselines3 Zoo's pairs for the installed algorithms "
                         "(zoo:ALGO/ENV names; needs pip install 'rlplug[zoo]')")
    recipes.set_defaults(func=command("catalog", "cmd_recipes"))

    show = sub.add_parser("show", parents=[common], help="print a resolved recipe and its backend settings")
    show.add_argument("name")
    show.add_argument("--backend")
    show.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    show.add_argument("--format", choices=("toml", "hydra"), default="toml", help="hydra: the recipe as a config in "
                      "TorchRL's own trainer config groups, trained by TorchRL alone (with --backend torchrl)")
    show.add_argument("--out", metavar="FILE.yaml", help="with --format hydra: write the config to FILE.yaml (an offline "
                      "recipe's dataset goes beside it) instead of printing it")
    show.set_defaults(func=command("catalog", "cmd_show"))

    losses = sub.add_parser("losses", parents=[common], help="registered losses per algorithm and backend")
    losses.add_argument("algorithm", nargs="?")
    losses.set_defaults(func=command("catalog", "cmd_losses"))

    train = sub.add_parser("train", parents=[common], help="train a recipe and write a run directory")
    train.add_argument("name")
    train.add_argument("--backend")
    train.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    train.add_argument("--steps", type=option_value, metavar="N", help="step budget (the recipe's steps)")
    train.add_argument("--seed", type=option_value, metavar="S", help="random seed (the recipe's seed)")
    train.add_argument("--env-module", metavar="MODULE", help="import a module that registers the environment (the recipe's "
                       "env_module; recorded in the run directory for eval and resume)")
    train.add_argument("--run-dir")
    train.add_argument("--no-write", action="store_true", help="write nothing at all")
    train.add_argument("--checkpoint-every", type=option_value, metavar="N", help="steps between checkpoints (default: a tenth of the budget)")
    train.add_argument("--eval-every", type=option_value, metavar="N", help="evaluate every N steps during training and keep the "
                       "best evaluation's state as checkpoints/best.pt (default: 0, only the final evaluation)")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.add_argument("--logger", metavar="NAMES", help="where scalars go besides metrics.csv, comma-separated: tensorboard, "
                       "csv, mlflow, wandb (default: tensorboard,csv; mlflow and wandb are extras); resume keeps them")
    _add_launch_options(train)
    train.set_defaults(func=command("training", "cmd_train"))

    evaluate = sub.add_parser("eval", parents=[common], help="evaluate a saved run (imports the --plugin modules it was trained with)")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--episodes", type=option_value, metavar="N", help="evaluation episodes (default: the recipe's eval_episodes)")
    evaluate.add_argument("--video", action="store_true", help="record the episodes to RUN_DIR/videos (needs moviepy: pip install 'rlplug[video]')")
    evaluate.add_argument("--exported", metavar="FILE", help="evaluate this exported policy file (rlplug export) instead of the checkpoint")
    evaluate.add_argument("--checkpoint", choices=("latest", "best"), default="latest",
                          help="best: checkpoints/best.pt, the best evaluation during training (default: latest)")
    evaluate.set_defaults(func=command("training", "cmd_eval"))

    resume = sub.add_parser("resume", parents=[common], help="continue a saved run (imports the --plugin modules it was trained with)")
    resume.add_argument("run_dir")
    resume.add_argument("--steps", type=option_value, metavar="N", help="new total step budget")
    resume.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    resume.add_argument("--checkpoint-every", type=option_value, metavar="N", help="steps between checkpoints (default: the run's own)")
    resume.add_argument("--eval-every", type=option_value, metavar="N", help="steps between evaluations during training (default: the run's own)")
    _add_launch_options(resume)
    resume.set_defaults(func=command("training", "cmd_resume"))

    bench = sub.add_parser("bench", parents=[common], help="train recipes and check their targets")
    bench.add_argument("names", nargs="*", metavar="NAME")
    bench.add_argument("--backend", help="comma-separated backends; 'default': each recipe's own backend (default: every "
                       "backend of the algorithm)")
    bench.add_argument("--steps", type=option_value, metavar="N", help="override every recipe's step budget")
    bench.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field of every recipe")
    bench.add_argument("--seed", type=option_value, metavar="S", help="train every row on this one seed (default: the recipe's)")
    bench.add_argument("--seeds", metavar="LIST|N", help="train every row once per seed: 0,1,2 (those seeds) or 3 (seeds 0, 1, 2); "
                       "a row passes when the mean over its seeds meets the target and at most one seed misses it")
    bench.add_argument("--jobs", type=int, default=1, metavar="N", help="train N rows x seeds at once, each in its own "
                       "single-threaded process (default: 1, in this process)")
    bench.add_argument("--tier", choices=("quick", "full"), help="only the recipes of this tier (quick: one seed in about "
                       "10 minutes on a 2-core CPU)")
    bench.add_argument("--runs-dir", metavar="DIR", help="write each row's run directory (metrics, curve.png) under DIR")
    bench.add_argument("--all", action="store_true", help="every first-party recipe on every backend; writes BENCHMARKS.md")
    bench.add_argument("--report", metavar="FILE.md", help="write the table as Markdown (and FILE.json) with the machine's details")
    bench.add_argument("--from-runs", action="append", metavar="DIR", help="train nothing: build the table from the finished "
                       "run directories under DIR (any depth: a Hydra multirun, a cluster's output), grouped by recipe and "
                       "backend, one seed per run; NAMEs and --backend select rows")
    bench.set_defaults(func=command("bench", "cmd_bench"))

    from .tune import add_tune_command  # tune and `show --space` (Optuna is imported when a study runs)

    add_tune_command(sub, common)

    from .export import add_export_command  # export; torch is imported when it runs

    add_export_command(sub, common)

    from .compare import add_compare_command  # compare; matplotlib is imported when it draws

    add_compare_command(sub, common)

    _add_dataset_commands(sub, common)
    from .recipe import add_recipe_parser  # recipe from-skrl; the translator is imported when it runs

    add_recipe_parser(sub, common)
    sub.add_parser("doctor", parents=[common], help="versions, plugins, and what failed to load").set_defaults(func=command("catalog", "cmd_doctor"))
    guide = sub.add_parser("guide", parents=[debug_only], help="print the plugin author's guide (docs/plugins.md)")
    guide.add_argument("topic", nargs="?", default="plugins", choices=("plugins",))
    guide.add_argument("--path", action="store_true", help="print where the guide is instead")
    guide.add_argument("--examples", action="store_true", help="print where the example plugins it names are")
    guide.set_defaults(func=command("catalog", "cmd_guide"))
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each command records its ``prog`` (``rlplug dataset collect``): the deepest one chosen wins."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
                command.set_defaults(command_prog=command.prog, command_options=options)
                _name_commands(command)


OVERWRITE_HELP = "replace an existing dataset of this name (only a dataset rlplug wrote)"


def _add_dataset_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    dataset = sub.add_parser("dataset", help="offline datasets: collect, from-run, build, info, list")
    dsub = dataset.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    collect = dsub.add_parser("collect", parents=[common], help="roll out a run's policy (or a random one) into a dataset")
    collect.add_argument("name")
    collect.add_argument("--env", required=True, help="Gymnasium environment id")
    collect.add_argument("--policy", metavar="RUN_DIR", help="behaviour policy: a run directory")
    collect.add_argument("--random", action="store_true", help="behaviour policy: uniformly random actions")
    collect.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: --policy)")
    collect.add_argument("--noise", type=option_value, default=0.0, help="epsilon (discrete) or Gaussian std as a fraction of the half action range")
    collect.add_argument("--steps", type=option_value, default=100_000, metavar="N", help="transitions to collect")
    collect.add_argument("--seed", type=option_value, default=0, metavar="S")
    collect.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    collect.add_argument("--no-progress", action="store_true")
    collect.set_defaults(func=command("dataset", "cmd_dataset_collect"))
    from_run = dsub.add_parser("from-run", parents=[common], help="a training run's replay memory as a dataset")
    from_run.add_argument("run_dir")
    from_run.add_argument("--name", help="dataset name (default: RUN_DIR's name + '-replay')")
    from_run.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: the run itself)")
    from_run.add_argument("--seed", type=option_value, default=0, metavar="S")
    from_run.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    from_run.set_defaults(func=command("dataset", "cmd_dataset_from_run"))
    build = dsub.add_parser("build", parents=[common], help="make a dataset declared in a recipe file ([datasets.NAME])")
    build.add_argument("name")
    build.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    build.add_argument("--no-progress", action="store_true")
    build.set_defaults(func=command("dataset", "cmd_dataset_build"))
    info = dsub.add_parser("info", parents=[common], help="a dataset's metadata")
    info.add_argument("name")
    info.add_argument("--verify", action="store_true", help="also check every file's checksum")
    info.set_defaults(func=command("dataset", "cmd_dataset_info"))
    dsub.add_parser("list", parents=[common], help="datasets on this machine, and declared ones not built yet").set_defaults(func=command("dataset", "cmd_dataset_list"))


def _add_launch_options(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("devices and processes (data-parallel through torchrun)")
    group.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="cuda: each process on its own GPU (default: cpu)")
    group.add_argument("--nproc", type=int, metavar="N", help="processes per node (ranks), launched by torch.distributed.run")
    group.add_argument("--nnodes", type=int, default=1, metavar="M", help="nodes taking part; run the same command on each (default: 1)")
    group.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="where the nodes meet (needed with --nnodes above 1)")
