"""``export`` (a run's deterministic policy as one TorchScript or ONNX file) and ``eval --exported`` (the
file itself, evaluated on the run's environment). The work is in ``rlplug.results.export``."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import note, open_session, print_json


EXPORT_FORMATS = ("torchscript", "onnx")
"""``rlplug.results.export.FORMATS``, spelled here so that building the parser does not import the exporter
(tests/test_imports.py keeps the two equal)."""


def add_export_command(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    export = sub.add_parser(
        "export", parents=[common],
        help="save a run's deterministic policy as one file that runs with plain torch (TorchScript) or onnxruntime (ONNX)",
    )  # fmt: skip
    export.add_argument("run_dir", help="a run directory written by rlplug train")
    export.add_argument("--format", default="torchscript", choices=EXPORT_FORMATS, help="torchscript (default) or onnx (needs rlplug[onnx])")
    export.add_argument("--out", metavar="FILE", help="where to write it (default: RUN_DIR/policy.pt, or RUN_DIR/policy.onnx); replaces only an earlier export")
    export.add_argument("--no-check", action="store_true", help="skip reading the file back and comparing its actions with the run's")
    export.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from ..results.export import check_format, default_path, describe_inputs, describe_tensor, export_policy
    from ..util.outputs import EXPORTED_POLICY, check_output
    from ..runs import open_run

    check_format(args.format)  # before the run is opened: a missing onnx is one line, at once
    run_dir = Path(args.run_dir)
    out = Path(args.out) if args.out else default_path(run_dir, args.format)
    check_output(out, EXPORTED_POLICY, "export --out")  # at once, not after the run is loaded
    from ..runs.policy_beside import copy_beside_checkpoint

    # the policy training left beside the checkpoint, checked then: no trainer built (rlplug.runs.policy_beside)
    result = copy_beside_checkpoint(run_dir, out) if args.format == "torchscript" else None
    if result is None:
        build = open_run(open_session(args), run_dir)
        try:
            note(build.extras["saved_run"].note)
            result = export_policy(build, out, args.format, check=not args.no_check)
        finally:
            build.trainer.close()
    if args.json:
        print_json(result)
        return 0
    meta = result["metadata"]
    unit = "gradient updates" if meta["step_unit"] == "updates" else "steps"
    from ..recipes.fields import task_label

    # the env it was trained on, as every other command names a run: a run with --set env=... is not the recipe's task
    print(f"{task_label(meta['recipe'], meta['env'], meta['backend'])} after {meta['steps']} {unit}: {result['format']} policy "
          f"written to {result['path']}")
    hidden = meta.get("hidden")  # a recurrent policy: its state in and out, zeros at an episode's start
    state = f", hidden {describe_tensor(hidden)}" if hidden else ""
    next_state = f", {'next_hidden' if result['format'] == 'onnx' else 'hidden'} {describe_tensor(hidden)}" if hidden else ""
    print(f"inputs: {describe_inputs(meta['inputs'])}{state} -> action {describe_tensor(meta['action'])}{next_state}")
    if result["max_abs_difference"] is not None:
        print(f"checked: its actions match act_deterministic's (largest difference {result['max_abs_difference']:.2g})")
    return 0


def cmd_eval_exported(args: argparse.Namespace, episodes: int | None, video_dir: str | None) -> int:
    """``rlplug eval RUN_DIR --exported FILE``: the file's deterministic episodes on the run's environment,
    with the seeds ``rlplug eval`` uses (the run's checkpoint is not loaded: the file is the policy)."""
    import numpy as np

    from ..results.export import evaluate_exported, load_exported
    from ..runs import saved_run, session_for_run
    from ..runs.evaluations import episode_bar

    run_dir = Path(args.run_dir)
    exported = load_exported(args.exported)
    saved = saved_run(run_dir, need_checkpoint=False)
    session = session_for_run(open_session(args), run_dir)
    build = session.prepare(saved.recipe, saved.backend)
    episodes = episodes or build.recipe.eval_episodes
    with episode_bar(episodes, not (args.json or getattr(args, "no_progress", False)), "evaluating"):
        returns = evaluate_exported(build, exported, episodes, video_dir)
    mean = float(np.mean(returns))
    result = {"run_dir": str(run_dir), "exported": str(exported.path), "format": exported.format, "recipe": build.recipe.ref,
              "backend": build.backend, "env": build.env_id, "steps": exported.metadata.get("steps"), "eval_episodes": len(returns),
              "eval_return_mean": round(mean, 2), "eval_return_std": round(float(np.std(returns)), 2), "target": build.recipe.target}  # fmt: skip
    if video_dir is not None:
        result["videos"] = sorted(str(p) for p in Path(video_dir).glob("*.mp4"))
    if args.json:
        print_json(result)
    else:
        from ..recipes.fields import task_label

        print(f"{task_label(result['recipe'], result['env'], result['backend'])}, exported {result['format']} policy {result['exported']}: eval return "
              f"{result['eval_return_mean']:.1f} ± {result['eval_return_std']:.1f} over {result['eval_episodes']} episodes")
        if video_dir is not None:
            print(f"videos: {video_dir} ({len(result['videos'])} files)")
    return 0
