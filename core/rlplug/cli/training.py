"""``train``, ``eval`` and ``resume``: the commands that build a cell and write or read a run directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..errors import RlplugError
from ..recipes.fields import task_label
from ..recipes.overrides import check_option
from ..runs.evaluations import check_eval_every, episode_bar
from ..runs.trackers import parse_loggers
from .tables import toml_value
from .common import note, open_session, print_json
from .dataset import ensure_dataset


def cmd_train(args: argparse.Namespace) -> int:
    from ..pipeline.distributed import world
    from ..runs import abandon, budget_note, check_new_run_dir, claim_new_run_dir, default_run_dir, join_ranks, train

    overrides = list(args.set or ())
    if args.steps is not None:  # checked by the recipe's own domains, as --set steps=N is
        overrides.append(option_override("steps", args.steps))
    if args.seed is not None:
        overrides.append(option_override("seed", args.seed))
    if args.env_module is not None:  # the recipe field, so `show`, the run directory and resume see it
        overrides.append(option_override("env_module", args.env_module))
    every = optional("checkpoint_every", args.checkpoint_every, "--checkpoint-every")
    eval_every = optional("eval_every", args.eval_every, "--eval-every")
    loggers = parse_loggers(args.logger)  # a missing extra is refused before anything is written
    device = args.device if launching(args) else worker_device(args)
    here = world()
    session = open_session(args)
    recipe = session.resolve(args.name, overrides)
    check_eval_every(eval_every, session.host.algorithm(recipe.algorithm).kind, recipe.name)
    run_dir = None
    if not args.no_write:
        run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(recipe, args.backend or recipe.backend)
        if here.is_main:
            check_new_run_dir(run_dir)  # before a dataset is made or an environment probed
    if here.is_main:
        ensure_dataset(session, recipe, quiet=args.json)
    build = session.prepare(recipe, args.backend, device=device)
    if args.nproc is not None:  # the launcher: everything above is checked once, before any process starts
        from ..pipeline.distributed import launch, worker_argv
        from ..runs import check_distributed

        check_distributed(build.algorithm, build.backend, session.host.algorithms.values())
        claim = hold_for_workers(args, run_dir, new=True)
        try:
            return launch(worker_argv(args.argv, None if run_dir is None else str(run_dir)), args.nproc, args.nnodes, args.rdzv_endpoint)
        finally:
            abandon(claim)  # the workers failed before rank 0 wrote anything
    join_ranks(build, session)
    claim = claim_new_run_dir(run_dir) if run_dir is not None and here.is_main else None
    try:
        session.construct(build)
        try:
            if here.is_main:
                note(budget_note(build, recipe.steps))
            summary = train(build, run_dir=run_dir, progress=not (args.json or args.no_progress), checkpoint_every=every,
                            loggers=loggers, eval_every=eval_every)
        finally:
            build.trainer.close()
    except BaseException:
        abandon(claim)
        raise
    return report(args, summary) if here.is_main else 0


def cmd_eval(args: argparse.Namespace) -> int:
    episodes = optional("episodes", args.episodes, "--episodes")
    video_dir = None
    if args.video:
        import importlib.util

        if importlib.util.find_spec("moviepy") is None:
            raise RlplugError("eval --video records with gymnasium's RecordVideo, which needs moviepy: pip install 'rlplug[video]'")
        video_dir = str(Path(args.run_dir) / "videos")
    if args.exported:  # the exported file is the policy: the checkpoint is not loaded
        if args.checkpoint != "latest":
            raise RlplugError(f"eval: --exported FILE is the policy evaluated; --checkpoint {args.checkpoint} chooses a "
                              "checkpoint instead: give one of them")  # fmt: skip
        from .export import cmd_eval_exported

        return cmd_eval_exported(args, episodes, video_dir)
    run_dir = Path(args.run_dir)
    result = _eval_beside_checkpoint(args, run_dir, episodes, video_dir) if args.checkpoint == "latest" else None
    if result is None:
        result = _eval_checkpoint(args, run_dir, episodes, video_dir)
    if video_dir is not None:
        result["videos"] = sorted(str(p) for p in Path(video_dir).glob("*.mp4"))
    if args.json:
        print_json(result)
    else:
        unit = "gradient updates" if result["step_unit"] == "updates" else "steps"
        score = f", normalised score {result['normalised_score']:.1f}" if result.get("normalised_score") is not None else ""
        which = " (best.pt)" if args.checkpoint == "best" else ""
        print(f"{task_label(result['recipe'], result['env'], result['backend'])} after {result['steps']} {unit}{which}: eval return "
              f"{result['eval_return_mean']:.1f} ± {result['eval_return_std']:.1f} over {result['eval_episodes']} episodes{score}")
        if video_dir is not None:
            print(f"videos: {video_dir} ({len(result['videos'])} files)")
    return 0


def _eval_checkpoint(args: argparse.Namespace, run_dir: Path, episodes: int | None, video_dir: str | None) -> dict[str, Any]:
    """The run rebuilt from its checkpoint, ``Trainer.evaluate``'s episodes."""
    from ..runs import open_run

    build = open_run(open_session(args), run_dir, checkpoint=args.checkpoint)
    try:
        note(build.extras["saved_run"].note)
        episodes = episodes or build.recipe.eval_episodes
        with episode_bar(episodes, not (args.json or args.no_progress), "evaluating"):
            returns = build.trainer.evaluate(episodes, video_dir=video_dir)
    finally:
        build.trainer.close()
    result = _eval_result(run_dir, build, args.checkpoint, build.trainer.progress, build.trainer.progress_unit, returns)
    dataset = build.extras.get("dataset")
    if dataset is not None:
        score = dataset.normalised_score(result["eval_return_mean"])
        result["normalised_score"] = round(score, 1) if score is not None else None
    return result


def _eval_beside_checkpoint(args: argparse.Namespace, run_dir: Path, episodes: int | None,
                            video_dir: str | None) -> dict[str, Any] | None:  # fmt: skip
    """The policy exported beside ``latest.pt`` when training ended (``rlplug.runs.policy_beside``), on the episodes
    ``Trainer.evaluate`` plays, with torch alone; ``None`` when there is none for the checkpoint as it is now, and
    for offline (dataset-normalised) and multi-agent runs, which are evaluated from the checkpoint."""
    from ..runs import session_for_run
    from ..runs.policy_beside import policy_beside_checkpoint
    from ..runs.saved import saved_recipe

    exported = policy_beside_checkpoint(run_dir)
    if exported is None:
        return None
    recipe, backend, _ = saved_recipe(run_dir)
    if recipe.dataset:
        return None
    build = session_for_run(open_session(args), run_dir).prepare(recipe, backend)
    if build.extras.get("multiagent") is not None:
        return None
    from ..results.export import evaluate_exported

    episodes = episodes or build.recipe.eval_episodes
    with episode_bar(episodes, not (args.json or args.no_progress), "evaluating"):
        returns = evaluate_exported(build, exported, episodes, video_dir)
    meta = exported.metadata
    return _eval_result(run_dir, build, "latest", int(meta["steps"]), meta["step_unit"], returns)


def _eval_result(run_dir: Path, build: Any, checkpoint: str, steps: int, unit: str, returns: list[float]) -> dict[str, Any]:
    import numpy as np

    return {"run_dir": str(run_dir), "recipe": build.recipe.ref, "backend": build.backend, "env": build.env_id,
            "checkpoint": checkpoint, "steps": steps, "step_unit": unit, "eval_episodes": len(returns),
            "eval_return_mean": round(float(np.mean(returns)), 2), "eval_return_std": round(float(np.std(returns)), 2),
            "target": build.recipe.target}  # fmt: skip


def cmd_resume(args: argparse.Namespace) -> int:
    """Continue a run from its checkpoint (``previous.pt`` when ``latest.pt`` is missing or corrupt; step 0
    with its recorded recipe when it stopped before its first one). The directory's lock is taken after
    the run is read and checked, so a refused resume leaves the directory exactly as it was."""
    from ..pipeline.distributed import world
    from ..runs import (budget_note, check_unchanged, check_writable, lock_run_dir, open_run, resume_note, saved_run,
                        session_for_run, train)

    run_dir = Path(args.run_dir)
    steps = optional("steps", args.steps, "--steps")
    every = optional("checkpoint_every", args.checkpoint_every, "--checkpoint-every")
    eval_every = optional("eval_every", args.eval_every, "--eval-every")
    if launching(args):  # checked once, before any process starts
        from ..pipeline.distributed import launch, worker_argv
        from ..runs import check_distributed

        saved = saved_run(run_dir, need_checkpoint=False)
        header = saved.payload["rlplug"] if saved.payload is not None else {}
        check_budget(run_dir, int(header.get("updates", header.get("env_steps", 0))), steps or saved.recipe.steps)
        session = session_for_run(open_session(args), run_dir)
        check_distributed(session.host.algorithm(saved.recipe.algorithm), saved.backend, session.host.algorithms.values())
        check_writable(run_dir)
        if hold_for_workers(args, run_dir, new=False) is not None:
            check_unchanged(saved)
        return launch(worker_argv(args.argv, None), args.nproc, args.nnodes, args.rdzv_endpoint)
    here = world()
    build = open_run(open_session(args), run_dir, worker_device(args), need_checkpoint=False)
    try:
        saved = build.extras["saved_run"]
        steps = steps or build.recipe.steps
        check_budget(run_dir, build.trainer.progress, steps)
        if here.is_main:
            check_writable(run_dir)
            if lock_run_dir(run_dir):
                check_unchanged(saved)
            # once the resume goes ahead (a refusal stays one line); stderr: --json output stays one document
            note(saved.note)
            if saved.payload is None:
                note(f"run {run_dir} stopped before its first checkpoint; training it from step 0 with its recorded recipe")
            note(resume_note(build.extras.get("saved_world_size", 1), here.size))
            if saved.payload is not None and "multiagent" not in build.extras:
                from ..envs.suites import resume_restart_note

                note(resume_restart_note(build.env_id))
            note(budget_note(build, steps))
        check_eval_every(eval_every, build.algorithm.kind, build.recipe.name)
        summary = train(build, steps=steps, run_dir=run_dir, progress=not (args.json or args.no_progress), resume=True,
                        checkpoint_every=every, eval_every=eval_every)
    finally:
        build.trainer.close()
    return report(args, summary) if here.is_main else 0


# ---- shared by train and resume ---------------------------------------------------------------------
def optional(name: str, value: Any, flag: str) -> Any:
    """A command-line value in its domain (``rlplug.recipes.overrides.check_option``), or ``None`` when not given."""
    return None if value is None else check_option(name, value, flag)


def option_override(name: str, value: Any) -> str:
    """``--steps V`` as the override ``steps=V``, so the recipe field's own domain checks it."""
    try:
        text = toml_value(value)
    except TypeError:  # a TOML date or time: refused as the string it is not meant to be
        text = json.dumps(str(value))
    return f"{name}={text}"


def check_budget(run_dir: Path, progress: int, steps: int) -> None:
    if progress >= steps:
        raise RlplugError(f"run {run_dir} already reached {progress} of {steps} steps; pass --steps to go further")


def hold_for_workers(args: argparse.Namespace, run_dir: Path | None, new: bool) -> Any:
    """The launcher of a multi-process run locks its run directory for the workers (one node: the
    directory is on this machine); rank 0 is told so and writes under that lock. Several nodes: rank 0
    locks it itself, wherever it runs."""
    from ..runs import claim_new_run_dir, hand_to_workers, lock_run_dir

    if run_dir is None or args.nnodes != 1:
        return None
    claim = claim_new_run_dir(run_dir) if new else lock_run_dir(run_dir)
    hand_to_workers(run_dir)
    return claim


def launching(args: argparse.Namespace) -> bool:
    """Whether this process is the launcher of a multi-process run (workers never see --nproc)."""
    if args.nproc is None and (args.nnodes != 1 or args.rdzv_endpoint):
        args.nproc = 1
    if args.nproc is not None and (args.nproc < 1 or args.nnodes < 1):  # before a run directory is locked
        raise RlplugError(f"--nproc and --nnodes must be at least 1 (got {args.nproc} and {args.nnodes})")
    return args.nproc is not None


def worker_device(args: argparse.Namespace) -> str:
    """This process's device: joins the process group first when torchrun started it (a worker)."""
    from ..pipeline.distributed import init_worker, rank_device, world

    device = args.device or "cpu"
    return init_worker(device) if world().distributed else rank_device(device, 0)


def report(args: argparse.Namespace, summary: dict[str, Any]) -> int:
    from ..runs import stop_line

    note(stop_line(summary.get("stopped_by")))  # stderr: --json output stays one document
    if args.json:
        print_json(summary)
    else:
        print(finish_line(summary))
    return 0


def finish_line(summary: dict[str, Any]) -> str:
    unit = "gradient updates" if summary.get("step_unit") == "updates" else "steps"
    score = ""
    if summary.get("normalised_score") is not None:
        score = f", normalised score {summary['normalised_score']:.1f} (dataset mean return {summary['dataset_return_mean']})"
    line = (f"{task_label(summary['recipe'], summary['env'], summary['backend'])}: eval return {summary['eval_return_mean']:.1f} "
            f"± {summary['eval_return_std']:.1f} over {summary['eval_episodes']} episodes{score} "
            f"({verdict_text(summary)}); {summary['steps']} {unit} in {summary['wall_seconds']:.1f} s")
    if summary.get("world_size", 1) > 1:
        line += (f" on {summary['world_size']} processes ({summary['steps_all_ranks']} {unit} over all ranks, "
                 f"{summary['steps_per_second_all_ranks']:.0f}/s)")
        if not summary.get("ranks_in_sync"):
            line += "\nwarning: the ranks' networks differ after training; report this as a bug"
    best = summary.get("best_eval")
    if best:
        at = best.get("updates", best.get("env_steps"))
        kept = f": {summary['run_dir']}/{best['checkpoint']}" if best.get("checkpoint") and summary.get("run_dir") else ""
        line += f"\nbest evaluation: {best['return']:.1f} at {unit[:-1] if unit.endswith('s') else unit} {at}{kept}"
    if summary.get("run_dir"):
        line += f"\nrun directory: {summary['run_dir']}"
    return line


def verdict_text(summary: dict[str, Any]) -> str:
    """``target 475, passed``; a run whose task is not its recipe's has none: ``no target on Acrobot-v1``."""
    if summary.get("target") is None:
        return f"no target on {summary['env']}: --set target=R gives one"
    target = f"score {summary['target']:g}" if summary.get("target_metric") == "normalised_score" else f"{summary['target']:g}"
    return f"target {target}, {'passed' if summary['passed'] else 'below target'}"
