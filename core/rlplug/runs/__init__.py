"""Run directories: what ``rlplug train`` writes, and how ``eval`` / ``resume`` read it back.

A run directory holds ``recipe.json`` (the resolved recipe, its backend and the ``--plugin`` modules),
``command.txt``, ``versions.json``, ``metrics.csv``, TensorBoard events under ``tb/``,
``checkpoints/latest.pt``, ``curve.png`` and ``summary.json``. One module per job:

* ``rundir``       the layout and the files that describe a run (written atomically, read back)
* ``claim``        a new run: checking, making and locking its directory, writing what describes it
* ``saved``        an existing run read back: its recipe and the checkpoint to continue from
* ``lock``         one writer per run directory (an OS lock on ``RUN_DIR/.lock``)
* ``versions``     the library versions a run records
* ``metrics``      ``metrics.csv`` and TensorBoard
* ``curve``        ``curve.png``
* ``checkpoints``  the checkpoint header, its checks, loading a state into a trainer
* ``checkpoint_io`` checkpoint files: atomic writes that keep the previous one, safe loads
* ``divergence``   stopping on NaN or infinite losses and parameters
* ``writer``       ``RunWriter``: all of the above for one training run
* ``training``     the train / resume loop and its checkpoint cadence
* ``evaluations``  evaluations during training (``eval_every``) and ``checkpoints/best.pt``
* ``policy_beside`` ``checkpoints/latest.policy.pt``: the final policy exported for a fast ``eval``
* ``summary``      ``summary.json``: the final evaluation against the target
* ``plugins``      the run's ``--plugin`` modules, imported again when it is opened
* ``reopen``       rebuilding a run and loading its checkpoint (``eval``, ``resume``, datasets)
* ``ranks``        distributed runs: who may, each rank's seed, resuming on another world size
"""

from __future__ import annotations

from .checkpoints import check_header, checkpoint_header, load_trainer_state
from .curve import plot_learning_curve
from .divergence import check_losses
from .plugins import session_for_run
from .ranks import check_distributed, join_ranks, resume_note
from .lock import hand_to_workers, held_run_dirs, lock_run_dir
from .reopen import open_run
from .claim import abandon, check_new_run_dir, claim_new_run_dir
from .rundir import CHECKPOINT, default_run_dir, recorded_checkpoint_every, recorded_plugins
from .saved import SavedRun, check_unchanged, check_writable, read_run, saved_run
from .summary import passed, summarise
from .training import budget_note, stop_line, train
from .versions import LIBRARIES, versions
from .writer import RunWriter

__all__ = [
    "CHECKPOINT",
    "LIBRARIES",
    "RunWriter",
    "SavedRun",
    "abandon",
    "budget_note",
    "stop_line",
    "check_distributed",
    "check_header",
    "check_new_run_dir",
    "check_unchanged",
    "check_writable",
    "claim_new_run_dir",
    "check_losses",
    "checkpoint_header",
    "default_run_dir",
    "hand_to_workers",
    "held_run_dirs",
    "join_ranks",
    "load_trainer_state",
    "lock_run_dir",
    "open_run",
    "passed",
    "plot_learning_curve",
    "read_run",
    "recorded_checkpoint_every",
    "recorded_plugins",
    "resume_note",
    "saved_run",
    "session_for_run",
    "summarise",
    "train",
    "versions",
]
