"""Exceptions users see. Every one of them prints as one line and exits with code 2."""

from __future__ import annotations


class RlplugError(Exception):
    """Base for every error caused by bad input; the CLI prints ``str(err)`` and exits 2."""

    exit_code = 2


class RecipeError(RlplugError):
    """A recipe is unknown, malformed, or fails validation."""


class UnknownNameError(RlplugError):
    """An unknown recipe, algorithm, backend, loss or hyperparameter name."""


class PluginError(RlplugError):
    """A plugin failed to import, conflicts with another one, or targets another API version."""


class BackendMissingError(RlplugError):
    """The library behind a backend (skrl, torchrl) is not installed."""


class SpaceError(RlplugError):
    """An environment's spaces do not fit the algorithm or backend."""


class EnvContractError(SpaceError):
    """An environment breaks the Gymnasium API at its first reset or step (``(obs, info)``, five step values, an
    observation of its declared space), or returns a NaN or infinite observation or reward (``rlplug.envs.check``)."""


class ActionMaskError(SpaceError):
    """An environment's action mask does not fit its action space or its own contract (``rlplug.envs.masks``), or
    the cell cannot honour one (it would take masked actions)."""


class EnvStepError(RlplugError):
    """An environment raised an exception inside its ``reset`` or ``step``; the line names it and the step."""


class EnvModuleError(RlplugError):
    """A module named to register environments (``module:Env-v0``, ``env_module``) cannot be imported."""


class SuiteMissingError(BackendMissingError):
    """An environment needs an optional suite (MuJoCo, Box2D, Atari, MinAtar) whose extra is not installed."""


class RunDirError(RlplugError):
    """A run directory does not exist, holds no checkpoint, or its checkpoint is unusable."""


class LossRegistrationError(RlplugError):
    """A loss name is registered twice without ``override=True``, or is not registered."""


class TrainingDivergedError(RlplugError):
    """A loss term or a parameter became NaN or infinite; training stopped, the last good checkpoint kept."""

    exit_code = 3


class CheckpointMismatchError(RunDirError):
    """A checkpoint belongs to another algorithm, backend, hyperparameter set or rlplug major version."""


class HookError(RlplugError):
    """A training hook is registered at an unknown destination, at one the trainer's loop does not call, or
    under a taken name; or a recipe's ``hooks`` entry names an unknown hook or argument (``rlplug.hooks``)."""


class NoReplayMemoryError(RlplugError):
    """A trainer keeps no replay memory to export (``Trainer.replay_transitions``'s default answer)."""


class VideoUnsupportedError(RlplugError):
    """A trainer's evaluation cannot record video (``Trainer.evaluate(video_dir=...)`` on a multi-agent env)."""


class ExportUnsupportedError(RlplugError):
    """A trainer cannot export its policy (``Trainer.export_policy``'s default answer), or an export format is unavailable."""


class ExportedFileError(RlplugError):
    """An exported policy file is missing, unreadable, not an rlplug export, or does not fit the run it is evaluated on."""


class CompareError(RlplugError):
    """Runs cannot be compared (``rlplug compare``): none given or found, or their progress is counted in different units."""


class TrackerMissingError(BackendMissingError):
    """``--logger mlflow`` or ``wandb`` without its optional extra installed."""


class TrackerError(RlplugError):
    """A tracker (MLflow, W&B) refused what a run sent it; the run's own files are already on disk."""


class RunPluginMissingError(RunDirError):
    """A run was trained with a ``--plugin`` module that cannot be imported here."""


class CorruptCheckpointError(RunDirError):
    """A checkpoint file is truncated, corrupt or not an rlplug checkpoint (``previous.pt`` may stand in)."""


class FormatVersionError(RlplugError):
    """A file rlplug wrote (a checkpoint, a dataset's metadata, an exported policy's metadata) in a format
    version this rlplug does not read: refused by name, never taken for a corrupt file and never moved aside."""


class ExportedFileVersionError(FormatVersionError, ExportedFileError):
    """An exported policy whose metadata is of another export format version (``rlplug_export``)."""


class CheckpointVersionError(FormatVersionError, RunDirError):
    """A checkpoint of another checkpoint format version (``rlplug.runs.checkpoint_io.FORMAT``)."""


class RunDirBusyError(RunDirError):
    """Another process holds the run directory's lock (it is training or resuming into it)."""


class OutputError(RlplugError):
    """An output path holds something rlplug did not write, is one of the command's own inputs, or another
    process is writing it (``rlplug.util.outputs``)."""


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a run after it wrote a checkpoint at the interrupt; the CLI exits
    ``128 + signal`` (130 for Ctrl-C, 143 for SIGTERM) with this line. A ``KeyboardInterrupt``, so code that
    stops on Ctrl-C keeps doing so."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class ZooMissingError(BackendMissingError):
    """A ``zoo:ALGO/ENV`` recipe without the zoo extra (RL Baselines3 Zoo's hyperparameter files) installed."""
