"""``--logger``: where a run's scalars go besides its own ``metrics.csv``: TensorBoard, MLflow, Weights & Biases.

``metrics.csv`` is always written (the curve, ``compare``, ``resume`` and the bench read it). TensorBoard
events go to ``RUN_DIR/tb``. MLflow logs to ``MLFLOW_TRACKING_URI``, else to MLflow's default local store
in the working directory (``mlflow.db``, artifacts under ``mlruns/``); the experiment is the recipe's
name unless ``MLFLOW_EXPERIMENT_NAME`` says otherwise. W&B runs offline (files under ``./wandb``, upload
later with ``wandb sync``) unless ``WANDB_MODE`` is set or an API key is configured; the project is
``rlplug`` unless ``WANDB_PROJECT`` says otherwise.

Each tracker gets the recipe as parameters, the scalars of ``metrics.csv`` (at their step), and at the end
the curve, summary and checkpoint as artifacts. Trackers are sent rows when a checkpoint is written: a run
killed after its checkpoint has sent them nothing that the resumed run writes again, so they keep one
timeline, as ``metrics.csv`` and TensorBoard do (W&B itself writes what it was sent to its offline file every
15 s, ``WANDB__TRANSACTION_LOG_FLUSH_INTERVAL``: a kill loses what it had not written yet). Their run ids are kept in ``RUN_DIR/trackers.json`` so a
resumed run continues the same tracker runs.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import RecipeError, RlplugError, RunDirError, TrackerError, TrackerMissingError
from ..contract.hookspecs import Build
from ..util.jsonfiles import read_json_object
from ..recipes.limits import TRACKER_CONNECT_TIMEOUT_S, WANDB_INIT_TIMEOUT_S
from ..util.suggest import did_you_mean

LOGGERS = ("tensorboard", "csv", "mlflow", "wandb")
DEFAULT_LOGGERS = ("tensorboard", "csv")
TRACKERS_FILE = "trackers.json"
_EXTRAS = {"mlflow": ("mlflow", "MLflow"), "wandb": ("wandb", "Weights & Biases")}


def parse_loggers(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """``--logger tensorboard,mlflow`` (or a list of names) as a tuple that always holds ``csv``; one line on
    an unknown name or a tracker whose extra is not installed (checked before a run directory is made)."""
    if text is None:
        return DEFAULT_LOGGERS
    if not isinstance(text, str):
        text = ",".join(str(name) for name in text)
    names = [part.strip() for part in str(text).split(",") if part.strip()]
    if not names:
        raise RecipeError(f"--logger needs one or more of {', '.join(LOGGERS)}, comma-separated")
    for name in names:
        if name not in LOGGERS:
            raise RecipeError(f"--logger {text}: unknown logger '{name}'{did_you_mean(name, LOGGERS)}")
    for name in names:
        check_installed(name)
    for name in names:  # before the run directory is made: a refused tracker leaves nothing behind
        check_server(name, configured_server(name))
    return tuple(dict.fromkeys([*names, "csv"]))


def check_installed(name: str) -> None:
    if name in _EXTRAS:
        module, label = _EXTRAS[name]
        if importlib.util.find_spec(module) is None:
            raise TrackerMissingError(f"--logger {name} logs to {label}, which is not installed: pip install 'rlplug[{name}]'")


@contextmanager
def tracker_errors(name: str, doing: str) -> Iterator[None]:
    """Whatever a tracker raises, as one line: the run's own files are already safe on disk."""
    try:
        yield
    except RlplugError:
        raise
    except Exception as err:  # a tracker's failures come in its own exception types
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise TrackerError(f"{name}: cannot {doing}: {detail}") from None


_SERVER_HINTS = {
    "mlflow": "is the tracking server running? (MLFLOW_TRACKING_URI names it)",
    "wandb": "is the W&B server up? (WANDB_BASE_URL names it; WANDB_MODE=offline logs to files)",
}


def configured_server(name: str) -> str | None:
    """The server a new run of tracker ``name`` would talk to, as the environment configures it (``None``:
    none, or files: MLflow's default local store, W&B offline)."""
    if name == "mlflow":
        return os.environ.get("MLFLOW_TRACKING_URI")
    if name == "wandb":
        return wandb_server(wandb_mode())
    return None


def wandb_server(mode: str | None) -> str | None:
    """The W&B server a run started in ``mode`` (``wandb_mode()``'s answer, or a resumed run's) talks to."""
    if (mode or os.environ.get("WANDB_MODE") or "online") not in ("online", "run"):
        return None
    return os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"


def check_server(name: str, uri: str | None) -> None:
    """Refuse at once a tracking server that does not take a connection within ``TRACKER_CONNECT_TIMEOUT_S``:
    the libraries' own retries wait minutes (MLflow 96 s and more, W&B 90 s) before they say anything.
    Only ``http(s)`` URIs reached directly are tried (a proxy's own reachability is the library's to find)."""
    import socket
    import urllib.request
    from urllib.parse import urlsplit

    if not uri:
        return
    hint = _SERVER_HINTS[name]
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if urllib.request.getproxies().get(parts.scheme) and not urllib.request.proxy_bypass(parts.hostname):
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TrackerError(f"{name}: {uri} is not a server address (its port is not a number); {hint}") from None
    try:
        socket.create_connection((parts.hostname, port), timeout=TRACKER_CONNECT_TIMEOUT_S).close()
    except OSError as err:
        if isinstance(err, ConnectionRefusedError):
            reason = "connection refused"
        elif isinstance(err, TimeoutError):
            reason = f"no answer within {TRACKER_CONNECT_TIMEOUT_S:g} s"
        elif isinstance(err, socket.gaierror):
            reason = f"unknown host {parts.hostname}"
        else:
            reason = err.strerror or type(err).__name__
        raise TrackerError(f"{name}: cannot reach the server at {uri} ({reason}); {hint}") from None


@contextmanager
def bounded_mlflow_requests() -> Iterator[None]:
    """MLflow's HTTP requests time out after ``TRACKER_CONNECT_TIMEOUT_S`` and are not retried while a run is
    opened (a server that takes a connection but never answers), unless the user set either; the defaults
    (120 s, 7 retries) come back for the run's own logging, where a passing failure should be retried."""
    bounds = {"MLFLOW_HTTP_REQUEST_TIMEOUT": str(int(TRACKER_CONNECT_TIMEOUT_S)), "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"}
    added = [key for key in bounds if key not in os.environ]
    os.environ.update({key: bounds[key] for key in added})
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def recipe_params(build: Build) -> dict[str, Any]:
    """The recipe as flat pairs (``hyperparameters.learning_rate``), plus the backend."""
    flat: dict[str, Any] = {"backend": build.backend}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        else:
            flat[prefix] = value

    walk("", build.recipe.to_table())
    return flat


class MlflowTracker:
    name = "mlflow"

    def __init__(self, run_dir: Path, build: Build, saved: dict[str, Any] | None) -> None:
        import mlflow
        from mlflow.tracking import MlflowClient

        logging.getLogger("mlflow").setLevel(logging.WARNING)  # its store set-up chatter is not the user's business

        uri = saved["tracking_uri"] if saved else mlflow.get_tracking_uri()
        check_server(self.name, uri)  # again: a resumed run's recorded URI, a Python caller's set_tracking_uri
        with bounded_mlflow_requests(), tracker_errors(self.name, f"open the tracking store {uri}"):
            self.client = MlflowClient(uri)
            if saved:
                self.run_id = saved["run_id"]
                self.client.update_run(self.run_id, status="RUNNING")
            else:
                self.run_id = self._create_run(run_dir, build)
        self.state = {"tracking_uri": uri, "run_id": self.run_id}

    def _create_run(self, run_dir: Path, build: Build) -> str:
        from mlflow.entities import Param

        name = os.environ.get("MLFLOW_EXPERIMENT_NAME") or build.recipe.name
        experiment = self.client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
        tags = {"rlplug.recipe": build.recipe.ref, "rlplug.backend": build.backend,
                "rlplug.algorithm": build.recipe.algorithm, "rlplug.run_dir": str(run_dir.resolve())}
        run = self.client.create_run(experiment_id, run_name=run_dir.name, tags=tags)
        params = [Param(key, _text(value)[:6000]) for key, value in recipe_params(build).items()]  # MLflow's value limit
        for start in range(0, len(params), 100):  # its batch limit
            self.client.log_batch(run.info.run_id, params=params[start:start + 100])
        return run.info.run_id

    def log(self, unit: str, rows: list[tuple[int, dict[str, float]]]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        metrics = [Metric(key, float(value), now, step) for step, row in rows for key, value in row.items()]
        with tracker_errors(self.name, f"log metrics to {self.state['tracking_uri']}"):  # where its store is: a full disk names it
            for start in range(0, len(metrics), 1000):  # its batch limit
                self.client.log_batch(self.run_id, metrics=metrics[start:start + 1000])

    def artifacts(self, run_dir: Path, paths: list[Path]) -> None:
        with tracker_errors(self.name, f"log artifacts to {self.state['tracking_uri']}"):
            for path in paths:
                folder = str(path.parent.relative_to(run_dir)) if path.parent != run_dir else None
                self.client.log_artifact(self.run_id, str(path), artifact_path=folder)

    def end(self, status: str) -> None:
        states = {"finished": "FINISHED", "interrupted": "KILLED", "failed": "FAILED"}
        with tracker_errors(self.name, "end its run"):
            self.client.set_terminated(self.run_id, states[status])


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class WandbTracker:
    name = "wandb"

    def __init__(self, run_dir: Path, build: Build, saved: dict[str, Any] | None) -> None:
        import wandb

        mode = saved["mode"] if saved else wandb_mode()
        run_id = saved["id"] if saved else secrets.token_hex(6)
        check_server(self.name, wandb_server(mode))
        # W&B waits 90 s for a server that takes the connection but never answers; a user's WANDB_INIT_TIMEOUT stands
        timeout = {} if os.environ.get("WANDB_INIT_TIMEOUT") else {"init_timeout": WANDB_INIT_TIMEOUT_S}
        with tracker_errors(self.name, f"start a run ({mode})"):
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "rlplug"), name=run_dir.name, id=run_id, resume="allow",
                mode=mode, config=recipe_params(build), tags=[build.recipe.name, build.backend], job_type="train",
                settings=wandb.Settings(silent=True, console="off", **timeout),  # stdout stays rlplug's (--json is one document)
            )
        self.state = {"id": run_id, "mode": mode, "dir": str(Path(self.run.dir).parent)}
        self.defined = False
        self.last_progress: int | None = None

    def log(self, unit: str, rows: list[tuple[int, dict[str, float]]]) -> None:
        """Each row committed at once (an uncommitted row is lost if the process is killed). W&B takes no
        second row at a step it has committed, and the final evaluation comes after its step's training row
        was sent: W&B's own step is ``2 * progress`` (``+ 1`` for that later row), and charts are drawn
        against ``unit`` (``define_metric``), so a resumed run's rows still come after the ones before."""
        with tracker_errors(self.name, "log metrics"):
            if not self.defined:
                self.run.define_metric(unit)
                self.run.define_metric("*", step_metric=unit)
                self.defined = True
            for progress, row in rows:
                step = 2 * progress + (1 if progress == self.last_progress else 0)
                self.run.log({unit: progress, **row}, step=step, commit=True)
                self.last_progress = progress

    def artifacts(self, run_dir: Path, paths: list[Path]) -> None:
        import wandb

        with tracker_errors(self.name, "log artifacts"):
            artifact = wandb.Artifact(f"run-{self.run.id}", type="rlplug-run")
            for path in paths:
                artifact.add_file(str(path), name=str(path.relative_to(run_dir)))
            self.run.log_artifact(artifact)

    def end(self, status: str) -> None:
        with tracker_errors(self.name, "end its run"):
            self.run.finish(exit_code=0 if status == "finished" else 1)


def wandb_mode() -> str | None:
    """``None`` (W&B decides: ``WANDB_MODE``, then its own login) when the user has configured W&B; else offline."""
    if os.environ.get("WANDB_MODE") or os.environ.get("WANDB_API_KEY"):
        return None
    import netrc

    try:
        logged_in = netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        logged_in = False
    return None if logged_in else "offline"


_TRACKERS = {"mlflow": MlflowTracker, "wandb": WandbTracker}


class Trackers:
    """The run's MLflow and W&B runs: rows held until the next checkpoint, then sent to each."""

    def __init__(self, run_dir: Path, build: Build, names: tuple[str, ...], resume: bool) -> None:
        from .rundir import write_json

        self.run_dir = run_dir
        self.unit = build.trainer.progress_unit
        self.pending: list[tuple[int, dict[str, float]]] = []
        self.open: list[Any] = []
        saved = read_tracker_state(run_dir) if resume else {}
        try:
            for name in names:
                if name in _TRACKERS:
                    check_installed(name)  # a resumed run on a machine without it
                    self.open.append(_TRACKERS[name](run_dir, build, saved.get(name)))
        except BaseException:
            self.end("failed")
            raise
        if self.open:
            write_json(run_dir / TRACKERS_FILE, {tracker.name: tracker.state for tracker in self.open})

    def add(self, progress: int, metrics: dict[str, float]) -> None:
        if not self.open:
            return
        if self.pending and self.pending[-1][0] == progress:
            self.pending[-1][1].update(metrics)  # the final evaluation joins its step's row
        else:
            self.pending.append((progress, dict(metrics)))

    def flush(self) -> None:
        """Send the rows held so far: called once they are covered by a checkpoint."""
        rows, self.pending = self.pending, []
        for tracker in self.open:
            tracker.log(self.unit, rows)

    def finish(self, paths: list[Path]) -> None:
        self.flush()
        present = [path for path in paths if path.is_file()]
        for tracker in self.open:
            tracker.artifacts(self.run_dir, present)
        self.end("finished")

    def end(self, status: str) -> None:
        trackers, self.open = self.open, []
        for tracker in trackers:
            tracker.end(status)


def read_tracker_state(run_dir: Path) -> dict[str, Any]:
    path = run_dir / TRACKERS_FILE
    if not path.is_file():
        return {}
    try:
        return read_json_object(path, RunDirError)
    except RunDirError as err:
        raise RunDirError(f"{err}; delete it to start new tracker runs") from None
