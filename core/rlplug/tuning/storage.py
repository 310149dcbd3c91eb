"""Where a study lives: an Optuna RDB storage (an SQLite file by default, PostgreSQL or MySQL for several
machines), and the configuration a study is bound to so a rerun of another command cannot mix its trials in."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import StudyError, require_optuna

DEFAULT_STORAGE = "sqlite:///rlplug-tune.db"
"""An SQLite file in the working directory: an embedded database, no server."""

CONFIG_ATTR = "rlplug"
"""The study's user attribute holding what its trials were trained with (``StudyConfig``)."""

COMPARED = ("recipe", "backend", "steps", "seeds", "overrides", "space", "objective", "evaluations", "max_seconds_per_trial")
"""What a rerun must share with the study it continues: trials trained otherwise are not comparable."""


def one_line(err: BaseException) -> str:
    """An exception as one line (SQLAlchemy's messages run over several, with a link to its docs)."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def open_storage(url: str) -> Any:
    """An ``optuna.storages.RDBStorage`` for ``url``, or a one-line ``StudyError``. Heartbeats let a rerun
    fail the trials of a process that was killed outright (``kill -9``) instead of waiting on them forever."""
    optuna = require_optuna()
    engine_kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}  # workers take turns writing
    try:
        return _retried(lambda: optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=30, grace_period=120), url)
    except Exception as err:  # noqa: BLE001 - SQLAlchemy, a missing driver, a bad URL: all one line
        hint = next((h for scheme, h in DRIVER_HINTS.items() if url.startswith(scheme)), "")
        missing_driver = "DB access module" in str(err) or isinstance(err, ImportError)
        raise StudyError(f"cannot open the study storage '{url}': {one_line(err)}{hint if missing_driver else ''}") from None


SCHEMA_ATTEMPTS = 3
"""Tries at opening a storage whose tables another machine is creating at the same moment (a server database:
an SQLite file is serialised by ``creating`` instead)."""


def _retried(make: Any, url: str) -> Any:
    attempt = 1
    while True:
        try:
            with creating(url):
                return make()
        except Exception as err:
            if attempt == SCHEMA_ATTEMPTS or not _created_meanwhile(err):
                raise
        time.sleep(0.2 * attempt)
        attempt += 1


def _created_meanwhile(err: BaseException) -> bool:
    """Whether ``err`` is another process creating the same tables first (``table studies already exists``, a
    duplicate ``alembic_version`` row): the tables are there now, so opening again succeeds."""
    text = str(err).lower()
    return type(err).__name__ == "IntegrityError" or "already exists" in text


@contextlib.contextmanager
def creating(url: str) -> Iterator[None]:
    """Serialise creating an SQLite storage's tables and a study in it between processes (``--jobs`` workers, two
    ``rlplug tune`` started at once): SQLAlchemy's table creation is not safe against a second creator, and two
    creators of one study would each record their own configuration. A lock file beside the database, held
    for the moment it takes; other URLs are left to the server (and the retries in ``open_storage``)."""
    from ..runs.lock import hold

    database = _sqlite_file(url)
    if database is None or not database.parent.is_dir():
        yield
        return
    with hold(database.with_name(database.name + ".lock"), wait=True, busy=StudyError):
        yield


def _sqlite_file(url: str) -> Path | None:
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url

    try:
        database = make_url(url).database
    except Exception:  # noqa: BLE001 - a malformed URL is reported by RDBStorage itself
        return None
    return Path(database) if database and database != ":memory:" and not database.startswith("file:") else None


DRIVER_HINTS = {
    "postgresql": " (PostgreSQL needs a driver: pip install psycopg2-binary)",
    "mysql": " (MySQL needs a driver: pip install pymysql, and a mysql+pymysql:// URL)",
}


def sampler(seed: int, startup_trials: int) -> Any:
    optuna = require_optuna()
    return optuna.samplers.TPESampler(seed=seed, n_startup_trials=startup_trials, multivariate=True)


def pruner(startup_trials: int, warmup_steps: int) -> Any:
    optuna = require_optuna()
    return optuna.pruners.MedianPruner(n_startup_trials=startup_trials, n_warmup_steps=warmup_steps)


def study_exists(storage: Any, name: str) -> bool:
    return any(s.study_name == name for s in storage.get_all_studies())


def open_study(storage: Any, name: str, config: dict[str, Any], seed: int, create: bool) -> Any:
    """The study ``name``, created with ``config`` when ``create`` and it does not exist yet; an existing
    study made for another configuration is refused with the field that differs."""
    optuna = require_optuna()
    with creating(storage.url):  # two processes creating one study: one creates and records its configuration
        exists = study_exists(storage, name)
        if not exists and not create:
            raise StudyError(f"no study '{name}' in {storage.url}; run `rlplug tune` without --export first")
        # the TPE seed differs with the trials already made, so a continued study does not redraw the first run's points
        trials_before = len(storage.get_all_trials(storage.get_study_id_from_name(name), deepcopy=False)) if exists else 0
        study = optuna.create_study(
            storage=storage, study_name=name, direction="maximize", load_if_exists=True,
            sampler=sampler(seed + 7919 * trials_before, STARTUP_TRIALS),
            pruner=pruner(STARTUP_TRIALS, config.get("warmup_steps", 0)),
        )  # fmt: skip
        if not exists:
            study.set_user_attr(CONFIG_ATTR, config)
        elif create:
            check_config(study, config)
    return study


STARTUP_TRIALS = 5
"""Random trials before TPE models the results, and complete trials before the median pruner prunes (RL Zoo's)."""


def study_config(study: Any) -> dict[str, Any]:
    config = study.user_attrs.get(CONFIG_ATTR)
    if not isinstance(config, dict):
        raise StudyError(f"study '{study.study_name}' was not made by rlplug tune (it has no '{CONFIG_ATTR}' record)")
    return config


def check_config(study: Any, config: dict[str, Any]) -> None:
    """Refuse to continue a study whose trials were trained with another recipe, budget, seeds or space."""
    stored = study_config(study)
    for key in COMPARED:
        if _canonical(stored.get(key)) != _canonical(config.get(key)):
            raise StudyError(
                f"study '{study.study_name}' was made with {key} = {_shown(stored.get(key))}, this command asks for "
                f"{_shown(config.get(key))}; pass --study NAME to start another study"
            )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."
