"""Running a study's trials: one at a time in this process, or in worker processes that share the study
through its storage; and the progress bar over trials with the best value so far.

``--trials N`` is what the study should hold: complete and pruned trials count, and so do trials running
in another process (a queued trial, the recipe as written, is the next one run); failed ones are recorded but do not count, so a rerun after a
crash or Ctrl-C runs what is missing. A process tries at most N trials per command, so a study whose
trials all fail still ends.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import RlplugError
from . import StudyError, require_optuna
from .storage import one_line


def counted(study: Any) -> int:
    """Trials that count towards ``--trials``."""
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
    return len(study.get_trials(deepcopy=False, states=states))


def finished(study: Any) -> int:
    from optuna.trial import TrialState

    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def run_trials(study: Any, objective: Callable[[Any], float], target: int, timeout: float | None,
               after_trial: Callable[[], None] = lambda: None) -> None:  # fmt: skip
    """Run trials in this process until the study holds ``target`` of them or ``timeout`` seconds passed
    (a running trial is not cut short)."""
    optuna = require_optuna()
    from .objective import CAUGHT

    started = time.monotonic()
    for _ in range(target):
        if timeout is not None and time.monotonic() - started >= timeout:
            break
        optuna.storages.fail_stale_trials(study)  # trials of a process killed outright (heartbeats stopped)
        if counted(study) >= target:
            break
        with storage_errors(study):
            study.optimize(objective, n_trials=1, catch=CAUGHT)
        after_trial()


@contextlib.contextmanager
def storage_errors(study: Any) -> Iterator[None]:
    """The study's storage failing to record a trial (a full disk, a database made read-only) is one line naming
    the storage and the cause; the trials recorded before stay in it."""
    try:
        yield
    except RlplugError:
        raise
    except Exception as err:  # noqa: BLE001 - SQLAlchemy's OperationalError, under whatever Optuna raised after it
        cause = _storage_cause(err)
        if cause is None:
            raise
        storage = getattr(study, "_storage", None)  # Optuna may wrap the RDB storage in a cache
        url = getattr(storage, "url", None) or getattr(getattr(storage, "_backend", None), "url", "?")
        raise StudyError(f"cannot write the study storage '{url}': {one_line(cause)}; the trials recorded before are kept") from None


def _storage_cause(err: BaseException | None) -> BaseException | None:
    """The database's error behind ``err``: Optuna's own bookkeeping can fail after it (an ``AssertionError`` on a
    trial left running), so the chain is searched."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if type(err).__module__.split(".")[0] in ("sqlalchemy", "sqlite3"):
            return err
        err = err.__cause__ or err.__context__
    return None


def run_workers(commands: list[list[str]], monitor: Monitor, poll: float = 1.0) -> list[int]:
    """Start one process per command (each a ``rlplug tune ... --worker I``), show their trials as they
    finish, and wait for them; their exit codes. Ctrl-C reaches them too (one process group): each marks
    its running trial failed and stops."""
    processes = [subprocess.Popen(command, stdin=subprocess.DEVNULL) for command in commands]
    try:
        while any(p.poll() is None for p in processes):
            monitor.update()
            time.sleep(poll)
    except KeyboardInterrupt:
        for p in processes:  # Ctrl-C in a terminal reached them already (they ignore a second signal); SIGTERM did not
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in processes:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
        raise
    monitor.update()
    return [p.returncode for p in processes]


class Monitor:
    """The bar over trials (complete and pruned ones; the best value so far, pruned and failed counts) and one
    line per finished trial, read from the study, whichever process ran the trial."""

    def __init__(self, study: Any, target: int, progress: bool, lines: bool) -> None:
        from tqdm import tqdm

        self.study, self.lines = study, lines
        self.seen = {t.number for t in self._finished_trials()}
        self.bar = tqdm(total=target, initial=min(finished(study), target), unit="trial", dynamic_ncols=True,
                        disable=not progress, file=sys.stderr, leave=False)  # fmt: skip

    def _finished_trials(self) -> list[Any]:
        return [t for t in self.study.get_trials(deepcopy=False) if t.state.is_finished()]

    def update(self) -> None:
        from optuna.trial import TrialState

        done = self._finished_trials()
        best = None
        for trial in sorted(done, key=lambda t: t.number):
            if trial.state == TrialState.COMPLETE and (best is None or trial.value > best):
                best = trial.value
            if trial.number not in self.seen:
                self.seen.add(trial.number)
                if self.lines:
                    self.bar.write(trial_line(trial, best), file=sys.stderr)
        states = [t.state for t in done]
        self.bar.n = min(states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED), self.bar.total)
        postfix = {"best": f"{best:.4g}" if best is not None else "-"}
        if TrialState.PRUNED in states:
            postfix["pruned"] = states.count(TrialState.PRUNED)
        if TrialState.FAIL in states:
            postfix["failed"] = states.count(TrialState.FAIL)
        self.bar.set_postfix(postfix, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def trial_line(trial: Any, best: float | None) -> str:
    """``trial 3: 187.4 (seeds: 180.2, 194.6) best so far`` / ``trial 4: pruned at step 2048 (23.1)`` / ..."""
    from optuna.trial import TrialState

    if trial.state == TrialState.COMPLETE:
        seeds = trial.user_attrs.get("seed_scores") or []
        per_seed = f" (seeds: {', '.join(f'{s:.4g}' for s in seeds)})" if len(seeds) > 1 else ""
        mark = " best so far" if best is not None and trial.value >= best else ""
        return f"trial {trial.number}: {trial.value:.4g}{per_seed}{mark}"
    outcome = trial.user_attrs.get("outcome")
    if trial.state == TrialState.PRUNED:
        return f"trial {trial.number}: {outcome or 'pruned'}"
    return f"trial {trial.number}: {outcome or 'failed'}"
