"""The argument parser: every command, its options, and the function that runs it."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable, Sequence
from typing import NoReturn

from ..errors import RlplugError


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
        from ..recipes.overrides import parse_value  # tomllib, only when an option is given

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


RECIPE_HELP = "a recipe's name (rlplug recipes), NAME@VERSION for an earlier version, or zoo:ALGO/ENV"
BACKEND_HELP = "skrl or torchrl (default: the recipe's backend)"
RUN_DIR_HELP = "a run directory written by rlplug train"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with ``only`` (a key of ``COMMANDS``, see ``chosen_command``) only that one's:
    `rlplug list` does not build the options of the other 14 commands (about 4 ms of its start-up, half of it
    gettext) nor import the modules that declare tune, export, compare and recipe."""
    common = Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the full traceback of an unexpected error")
    common.add_argument("--plugin", action="append", metavar="MODULE[:OBJ]", help="import a module (or an object in it) and register it as a plugin")
    common.add_argument("--recipes", action="append", metavar="FILE", help="add the recipes in a TOML file")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    parser = Parser(prog="rlplug", description="Train RL algorithms from named recipes on skrl or TorchRL.")
    parser.add_argument("--version", action="version", version="rlplug 0.1.0")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an unexpected error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in COMMANDS.items():
        if only is None or name == only:
            add(sub, common)
    _name_commands(parser)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs, when nothing but ``--debug`` comes before it; ``None`` (build every command)
    when anything else does (``--help`` lists every command, ``--version``, a misspelt command that gets its
    did-you-mean from the full list) or there is no command at all."""
    for token in argv:
        if token != "--debug":
            return token if token in COMMANDS else None
    return None


def _add_list(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub.add_parser("list", parents=[common], help="algorithms x backends, with plugin and version").set_defaults(func=command("catalog", "cmd_list"))


def _add_recipes(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    recipes = sub.add_parser("recipes", parents=[common], help="known recipes")
    recipes.add_argument("--zoo", action="store_true", help="RL Baselines3 Zoo's pairs for the installed algorithms "
                         "(zoo:ALGO/ENV names; needs pip install 'rlplug[zoo]')")
    recipes.set_defaults(func=command("catalog", "cmd_recipes"))


def _add_show(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    show = sub.add_parser("show", parents=[common], help="print a resolved recipe and its backend settings")
    show.add_argument("name", help=RECIPE_HELP)
    show.add_argument("--backend", help=BACKEND_HELP)
    show.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    show.add_argument("--format", choices=("toml", "hydra"), default="toml", help="toml (default): the recipe as rlplug "
                      "resolves it; hydra: the recipe as a config in TorchRL's own trainer config groups, trained by TorchRL "
                      "alone (with --backend torchrl)")
    show.add_argument("--out", metavar="FILE.yaml", help="with --format hydra: write the config to FILE.yaml (an offline "
                      "recipe's dataset goes beside it) instead of printing it")
    # cli.tune's cmd_show_space answers it (imported only then)
    show.add_argument("--space", action="store_true", help="print the recipe's search space for `rlplug tune` instead")
    show.set_defaults(func=command("catalog", "cmd_show"))


def _add_losses(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    losses = sub.add_parser("losses", parents=[common], help="registered losses per algorithm and backend")
    losses.add_argument("algorithm", nargs="?", help="only this algorithm's losses (default: every algorithm's)")
    losses.set_defaults(func=command("catalog", "cmd_losses"))

def _add_train(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    train = sub.add_parser("train", parents=[common], help="train a recipe and write a run directory")
    train.add_argument("name", help=RECIPE_HELP)
    train.add_argument("--backend", help=BACKEND_HELP)
    train.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a recipe field or hyperparameter")
    train.add_argument("--steps", type=option_value, metavar="N", help="step budget (the recipe's steps)")
    train.add_argument("--seed", type=option_value, metavar="S", help="random seed (the recipe's seed)")
    train.add_argument("--env-module", metavar="MODULE", help="import a module that registers the environment (the recipe's "
                       "env_module; recorded in the run directory for eval and resume)")
    train.add_argument("--run-dir", metavar="DIR", help="where to write the run (default: runs/RECIPE-BACKEND-YYYYmmdd-HHMMSS)")
    train.add_argument("--no-write", action="store_true", help="write nothing at all")
    train.add_argument("--checkpoint-every", type=option_value, metavar="N", help="steps between checkpoints (default: a tenth of the budget)")
    train.add_argument("--eval-every", type=option_value, metavar="N", help="evaluate every N steps during training and keep the "
                       "best evaluation's state as checkpoints/best.pt (default: 0, only the final evaluation)")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    train.add_argument("--logger", metavar="NAMES", help="where scalars go besides metrics.csv, comma-separated: tensorboard, "
                       "csv, mlflow, wandb (default: tensorboard,csv; mlflow and wandb are extras); resume keeps them")
    _add_launch_options(train)
    train.set_defaults(func=command("training", "cmd_train"))


def _add_evaluate(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    evaluate = sub.add_parser("eval", parents=[common], help="evaluate a saved run (imports the --plugin modules it was trained with)")
    evaluate.add_argument("run_dir", help=RUN_DIR_HELP)
    evaluate.add_argument("--episodes", type=option_value, metavar="N", help="evaluation episodes (default: the recipe's eval_episodes)")
    evaluate.add_argument("--video", action="store_true", help="record the episodes to RUN_DIR/videos (needs moviepy: pip install 'rlplug[video]')")
    evaluate.add_argument("--exported", metavar="FILE", help="evaluate this exported policy file (rlplug export) instead of the checkpoint")
    evaluate.add_argument("--checkpoint", choices=("latest", "best"), default="latest",
                          help="best: checkpoints/best.pt, the best evaluation during training (default: latest)")
    evaluate.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    evaluate.set_defaults(func=command("training", "cmd_eval"))


def _add_resume(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    resume = sub.add_parser("resume", parents=[common], help="continue a saved run (imports the --plugin modules it was trained with)")
    resume.add_argument("run_dir", help=RUN_DIR_HELP)
    resume.add_argument("--steps", type=option_value, metavar="N", help="new total step budget")
    resume.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    resume.add_argument("--checkpoint-every", type=option_value, metavar="N", help="steps between checkpoints (default: the run's own)")
    resume.add_argument("--eval-every", type=option_value, metavar="N", help="steps between evaluations during training (default: the run's own)")
    _add_launch_options(resume)
    resume.set_defaults(func=command("training", "cmd_resume"))


def _add_bench(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    bench = sub.add_parser("bench", parents=[common], help="train recipes and check their targets")
    bench.add_argument("names", nargs="*", metavar="NAME", help="recipes to train (default: every first-party recipe of the tier)")
    bench.add_argument("--backend", help="comma-separated backends; 'default': each recipe's own backend (default: every "
                       "backend of the algorithm)")
    bench.add_argument("--steps", type=option_value, metavar="N", help="override every recipe's step budget")
    bench.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field of every recipe")
    bench.add_argument("--seed", type=option_value, metavar="S", help="train every row on this one seed (default: the recipe's)")
    bench.add_argument("--seeds", metavar="LIST|N", help="train every row once per seed: 0,1,2 (those seeds) or 3 (seeds 0, 1, 2); "
                       "a row passes when the mean over its seeds meets the target and at most one seed misses it")
    bench.add_argument("--jobs", type=int, default=1, metavar="N", help="train N rows x seeds at once, each in its own "
                       "single-threaded process (default: 1, in this process)")
    bench.add_argument("--tier", choices=("quick", "full"), help="only the recipes of this tier: quick (one seed in about "
                       "10 minutes on a 2-core CPU) or full (default: both)")
    bench.add_argument("--runs-dir", metavar="DIR", help="write each row's run directory (metrics, curve.png) under DIR")
    bench.add_argument("--continue", dest="continue_runs", action="store_true", help="with --runs-dir: an interrupted bench goes on (finished runs counted, interrupted ones resumed, the rest trained)")
    bench.add_argument("--all", action="store_true", help="every first-party recipe on every backend; writes BENCHMARKS.md")
    bench.add_argument("--report", metavar="FILE.md", help="write the table as Markdown (and FILE.json) with the machine's details")
    bench.add_argument("--from-runs", action="append", metavar="DIR", help="train nothing: build the table from the finished "
                       "run directories under DIR (any depth: a Hydra multirun, a cluster's output), grouped by recipe and "
                       "backend, one seed per run; NAMEs and --backend select rows")
    bench.set_defaults(func=command("bench", "cmd_bench"))


def _add_tune(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from .tune import add_tune_command  # tune (Optuna is imported when a study runs)

    add_tune_command(sub, common)


def _add_export(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from .export import add_export_command  # export; torch is imported when it runs

    add_export_command(sub, common)


def _add_compare(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from .compare import add_compare_command  # compare; matplotlib is imported when it draws

    add_compare_command(sub, common)


def _add_recipe(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    from .recipe import add_recipe_parser  # recipe from-skrl; the translator is imported when it runs

    add_recipe_parser(sub, common)


def _add_doctor(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    sub.add_parser("doctor", parents=[common], help="versions, plugins, and what failed to load").set_defaults(func=command("catalog", "cmd_doctor"))


def _add_guide(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    debug_only = Parser(add_help=False)
    debug_only.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    guide = sub.add_parser("guide", parents=[debug_only], help="print the plugin author's guide (docs/plugins.md)")
    guide.add_argument("topic", nargs="?", default="plugins", choices=("plugins",), help="plugins, the plugin author's guide (default)")
    guide.add_argument("--path", action="store_true", help="print where the guide is instead")
    guide.add_argument("--examples", action="store_true", help="print where the example plugins it names are")
    guide.set_defaults(func=command("catalog", "cmd_guide"))


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Each command records its ``prog`` (``rlplug dataset collect``): the deepest one chosen wins."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                options = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
                command.set_defaults(command_prog=command.prog, command_options=options)
                _name_commands(command)


OVERWRITE_HELP = "replace an existing dataset of this name (only a dataset rlplug wrote)"


def _add_dataset(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    dataset = sub.add_parser("dataset", help="offline datasets: collect, from-run, build, info, list")
    dsub = dataset.add_subparsers(dest="dataset_command", required=True, metavar="ACTION")
    collect = dsub.add_parser("collect", parents=[common], help="roll out a run's policy (or a random one) into a dataset")
    collect.add_argument("name", help="the new dataset's name")
    collect.add_argument("--env", required=True, help="Gymnasium environment id")
    collect.add_argument("--policy", metavar="RUN_DIR", help="behaviour policy: a run directory")
    collect.add_argument("--random", action="store_true", help="behaviour policy: uniformly random actions")
    collect.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: --policy)")
    collect.add_argument("--noise", type=option_value, default=0.0, help="epsilon (discrete) or Gaussian std as a fraction of the half action range")
    collect.add_argument("--steps", type=option_value, default=100_000, metavar="N", help="transitions to collect (default: 100000)")
    collect.add_argument("--seed", type=option_value, default=0, metavar="S", help="seed of the environments and the policy's noise (default: 0)")
    collect.add_argument("--envs", type=option_value, default=1, metavar="N",
                         help="environments stepped together, the policy acting on their batch (default: 1; N > 1 gives other transitions)")
    collect.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    collect.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    collect.set_defaults(func=command("dataset", "cmd_dataset_collect"))
    from_run = dsub.add_parser("from-run", parents=[common], help="a training run's replay memory as a dataset")
    from_run.add_argument("run_dir", help="a run directory of an off-policy recipe (its replay memory)")
    from_run.add_argument("--name", help="dataset name (default: RUN_DIR's name + '-replay')")
    from_run.add_argument("--expert", metavar="RUN_DIR", help="run whose return is the expert reference (default: the run itself)")
    from_run.add_argument("--seed", type=option_value, default=0, metavar="S", help="seed of the evaluation episodes that measure the expert return (default: 0)")
    from_run.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    from_run.set_defaults(func=command("dataset", "cmd_dataset_from_run"))
    build = dsub.add_parser("build", parents=[common], help="make a dataset declared in a recipe file ([datasets.NAME])")
    build.add_argument("name", help="a dataset declared in a recipe file ([datasets.NAME], given with --recipes)")
    build.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    build.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    build.set_defaults(func=command("dataset", "cmd_dataset_build"))
    info = dsub.add_parser("info", parents=[common], help="a dataset's metadata")
    info.add_argument("name", help="a dataset's name or directory (rlplug dataset list)")
    info.add_argument("--verify", action="store_true", help="also check every file's checksum")
    info.set_defaults(func=command("dataset", "cmd_dataset_info"))
    export = dsub.add_parser("export", parents=[common], help="write a dataset in another library's format (Minari)")
    export.add_argument("name", help="a dataset's name or directory (rlplug dataset list)")
    export.add_argument("--format", required=True, choices=("minari",), help="minari: a Minari dataset in the local Minari "
                        "root ($MINARI_DATASETS_PATH), which minari.load_dataset opens")
    export.add_argument("--id", metavar="NAMESPACE/NAME-vN", help="the Minari dataset id (default: rlplug/NAME-v0)")
    export.set_defaults(func=command("dataset", "cmd_dataset_export"))
    dsub.add_parser("list", parents=[common], help="datasets on this machine, and declared ones not built yet").set_defaults(func=command("dataset", "cmd_dataset_list"))


def _add_launch_options(command: argparse.ArgumentParser) -> None:
    group = command.add_argument_group("devices and processes (data-parallel through torchrun)")
    group.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="cuda: each process on its own GPU (default: cpu)")
    group.add_argument("--nproc", type=int, metavar="N", help="processes per node (ranks), launched by torch.distributed.run")
    group.add_argument("--nnodes", type=int, default=1, metavar="M", help="nodes taking part; run the same command on each (default: 1)")
    group.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="where the nodes meet (needed with --nnodes above 1)")


# every command, in the order `rlplug --help` lists them: name -> the function that adds its parser
COMMANDS: dict[str, Callable[[argparse._SubParsersAction, argparse.ArgumentParser], None]] = {
    "list": _add_list, "recipes": _add_recipes, "show": _add_show, "losses": _add_losses, "train": _add_train,
    "eval": _add_evaluate, "resume": _add_resume, "bench": _add_bench, "tune": _add_tune, "export": _add_export,
    "compare": _add_compare, "dataset": _add_dataset, "recipe": _add_recipe, "doctor": _add_doctor, "guide": _add_guide,
}
