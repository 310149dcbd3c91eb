"""``rlplug-hydra``: a recipe as a Hydra config (the ``hydra`` extra).

Every known recipe is a config group option (``recipe=ppo-cartpole``) whose node is the resolved recipe with
every hyperparameter at its value or its default, so ``--cfg job``, ``--help`` and tab completion show each
field; overrides use Hydra's grammar (``hyperparameters.learning_rate=3e-4 seed=1 backend=torchrl``,
``+torchrl.minibatch_size=256`` for a raw backend setting the recipe does not set; training hooks as a list of
tables, ``'hooks=[{hook: early_stopping, monitor: batch/next.reward_mean, patience: 3}]'``). A job hands the fields
that differ from the recipe to ``rlplug train`` as ``--set`` overrides, so rlplug's own schema, domains and
one-line errors apply unchanged, and it trains into an ordinary run directory beside Hydra's ``.hydra/``
record: ``<hydra output dir>/<recipe>-<backend>/``. ``--multirun`` works on any Hydra launcher (basic,
``submitit_local`` / ``submitit_slurm``); a job returns its evaluation return (for a sweeper to maximise).

Recipe files of your own: ``RLPLUG_RECIPES=FILE[:FILE...]`` (Hydra owns the command line); plugins found from
installed distributions are there as for ``rlplug``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

GROUP = "recipe"
# Hydra's own defaults for rlplug jobs: runs land under runs/ like `rlplug train`'s, one folder a job.
HYDRA_DEFAULTS = {
    "run": {"dir": "runs/hydra/${now:%Y%m%d-%H%M%S}"},
    "sweep": {"dir": "runs/hydra-multirun/${now:%Y%m%d-%H%M%S}", "subdir": "${hydra.job.num}"},
    "job": {"chdir": False, "name": "rlplug"},
    "help": {
        "app_name": "rlplug-hydra",
        "header": "rlplug-hydra: train an rlplug recipe, configured and swept with Hydra",
        "footer": "recipe=NAME picks the recipe (every one is listed under 'recipe' above); its fields are overridden in "
                  "Hydra's grammar (hyperparameters.learning_rate=3e-4 seed=1 backend=torchrl, +torchrl.minibatch_size=256),"
                  " training hooks as a list ('hooks=[{hook: early_stopping, monitor: batch/next.reward_mean, patience: 3}]'),"
                  " all checked by rlplug's schema. --multirun sweeps; hydra/launcher=submitit_local, submitit_slurm or "
                  "rlplug_ray runs the jobs elsewhere. Each job writes an rlplug run directory beside .hydra/.",
    },
}
DEFAULT_RECIPE = "ppo-cartpole"  # as `rlplug train`'s README example: --help and --cfg need one to compose
# Fields a Hydra job sets through `rlplug train`'s own options rather than as recipe overrides.
NOT_OVERRIDES = ("backend",)


def recipe_files() -> list[str]:
    return [p for p in os.environ.get("RLPLUG_RECIPES", "").split(os.pathsep) if p]


def open_session() -> Any:
    from ..pipeline.session import Session

    return Session(recipe_files=recipe_files())


def recipe_node(session: Any, ref: str) -> dict[str, Any]:
    """The resolved recipe as a config node: the table `rlplug show` prints, hyperparameters with defaults,
    ``hooks`` (an empty list for a recipe that names none, so ``hooks=[...]`` replaces it like any field) and an
    empty table for each backend's raw settings so ``+torchrl.KEY=V`` has a place to go."""
    recipe = session.resolve(ref)
    spec = session.host.algorithm(recipe.algorithm)
    table = recipe.to_table()
    table["hyperparameters"] = {**spec.defaults(), **recipe.hyperparameters}
    table.setdefault("hooks", [])
    for backend in spec.backends:
        table.setdefault(backend, {})
    return table


def store_configs(session: Any) -> None:
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    names = session.book.names()
    default = DEFAULT_RECIPE if DEFAULT_RECIPE in names else "???"
    store.store(name="rlplug", node={"defaults": ["_self_", {GROUP: default}], "hydra": HYDRA_DEFAULTS})
    for name in names:
        store.store(group=GROUP, name=name, node=recipe_node(session, name), package="_global_")


def overrides_from(base: dict[str, Any], chosen: dict[str, Any], prefix: str = "") -> list[str]:
    """``key=TOML`` for each value of the composed config that differs from the recipe (dotted for tables)."""
    from ..cli.tables import toml_value

    items = []
    for key, value in chosen.items():
        if not prefix and key in NOT_OVERRIDES:
            continue
        old = base.get(key, None) if isinstance(base, dict) else None
        if isinstance(value, dict) and isinstance(old, dict):
            items += overrides_from(old, value, f"{prefix}{key}.")
        elif key not in base or value != old:
            items.append(f"{prefix}{key}={toml_value(value)}")
    return items


def run_job(cfg: Any) -> float:
    """One Hydra job: `rlplug train` of the chosen recipe with the job's overrides; its evaluation return."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from ..cli import main as rlplug_main
    from ..errors import RunDirError
    from ..util.jsonfiles import read_json_object
    from ..runs.rundir import SUMMARY_FILE

    hydra = HydraConfig.get()
    ref = hydra.runtime.choices[GROUP]
    chosen = OmegaConf.to_container(cfg, resolve=True)
    chosen.pop("hydra", None)
    overrides = overrides_from(recipe_node(open_session(), ref), chosen)
    backend = str(chosen["backend"])
    run_dir = Path(hydra.runtime.output_dir) / f"{chosen['name']}-{backend}"
    argv = ["train", ref, "--backend", backend, "--run-dir", str(run_dir)]
    for path in recipe_files():
        argv += ["--recipes", path]
    for item in overrides:
        argv += ["--set", item]
    code = rlplug_main(argv)
    if code != 0:  # rlplug has said why in its one line; the job (and a basic-launcher sweep) stops with its code
        raise SystemExit(code)
    return float(read_json_object(run_dir / SUMMARY_FILE, RunDirError)["eval_return_mean"])


PREFIXES = {"ADD": "+", "FORCE_ADD": "++", "DEL": "~"}


def check_overrides(session: Any, argv: list[str]) -> None:
    """Compose the config Hydra is about to compose, each sweep at its first value, so that what Hydra would refuse
    in its own words (a key the recipe's config does not have, at any depth; a value it cannot take; a malformed
    override) is refused in rlplug's: one line, exit 2, with rlplug's own did-you-mean for the key."""
    from hydra import compose, initialize
    from hydra._internal.utils import get_args_parser
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from ..errors import RecipeError

    args, extra = get_args_parser().parse_known_args(argv)
    if args.help or args.hydra_help or args.info or args.shell_completion or args.experimental_rerun or args.config_name:
        return
    lines = [*args.overrides, *(a for a in extra if not a.startswith("-"))]
    try:
        overrides = OverridesParser.create().parse_overrides(lines)
    except HydraException as err:
        raise RecipeError(f"rlplug-hydra: {_first_line(err)}") from None
    single = []
    for override in overrides:
        if override.key_or_group.split(".")[0] == "hydra":
            continue  # Hydra's own settings: Hydra checks them
        if not override.is_sweep_override():
            single.append(override.input_line)
        elif not override.is_interval_sweep():
            first = next(iter(override.sweep_string_iterator()))
            single.append(f"{PREFIXES.get(override.type.name, '')}{override.key_or_group}={first}")
    GlobalHydra.instance().clear()
    try:
        with initialize(version_base="1.3", config_path=None):
            compose("rlplug", overrides=single)
    except (HydraException, OmegaConfBaseException) as err:
        raise _refusal(session, overrides, err) from None
    finally:
        GlobalHydra.instance().clear()


def _refusal(session: Any, overrides: list[Any], err: Exception) -> Exception:
    """rlplug's refusal of the override Hydra refused: a key missing from the recipe's config goes through rlplug's
    own check (``unknown hyperparameter 'learning_rat' for ppo (did you mean 'learning_rate'?)``); a key rlplug
    takes but the config does not hold is added with ``+``; anything else is Hydra's message on one line."""
    from ..errors import RecipeError, RlplugError

    refs = [o for o in overrides if o.key_or_group == GROUP and not o.is_delete()]
    ref = str(refs[-1].value() if not refs[-1].is_sweep_override() else next(iter(refs[-1].sweep_string_iterator()))) if refs else DEFAULT_RECIPE
    try:
        node = recipe_node(session, ref)
    except RlplugError as problem:
        return problem
    for override in overrides:
        key = override.key_or_group
        if key == GROUP or key.split(".")[0] == "hydra" or override.type.name != "CHANGE" or _holds(node, key):
            continue
        try:
            session.prepare(ref, None, [f"{key}=0"])  # rlplug's own refusal names the key and what was meant
        except RlplugError as problem:
            text = str(problem)
            return type(problem)(text[len("--set "):] if text.startswith("--set ") else text)
        return RecipeError(f"recipe '{ref}': '{key}' is not in the recipe's config; Hydra adds a key with +{key}=VALUE")
    return RecipeError(f"rlplug-hydra: {_first_line(err)}")


def _holds(node: Any, dotted: str) -> bool:
    for part in dotted.split("."):
        if isinstance(node, list):
            return True  # an item of a list (hooks.0.patience): Hydra and rlplug's schema check it
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _first_line(err: Exception) -> str:
    text = " ".join(str(err).split("\n")[0].split())
    return text or type(err).__name__


def main() -> None:
    if importlib.util.find_spec("hydra") is None:
        print("rlplug: error: rlplug-hydra needs Hydra: pip install 'rlplug[hydra]'", file=sys.stderr)
        raise SystemExit(2)
    import hydra

    from ..errors import RlplugError

    os.environ.setdefault("RL_LOGGING_LEVEL", "WARNING")
    try:
        session = open_session()
        store_configs(session)
        check_overrides(session, sys.argv[1:])
    except RlplugError as err:  # a broken RLPLUG_RECIPES file, an override Hydra would refuse: rlplug's one line
        print(f"rlplug: error: {err}", file=sys.stderr)
        raise SystemExit(err.exit_code) from None
    hydra.main(config_path=None, config_name="rlplug", version_base="1.3")(run_job)()


if __name__ == "__main__":
    main()
