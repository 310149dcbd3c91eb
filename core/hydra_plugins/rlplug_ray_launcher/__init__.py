"""A Hydra launcher that runs each job of a sweep as a Ray task: ``hydra/launcher=rlplug_ray``.

Why not ``hydra-ray-launcher``: its 1.2 requires ``cloudpickle<3`` (rlplug's tested set has 3.1), and pip's
fallback to its 0.1.2 downgrades urllib3 to 1.25 and pulls a 2020 boto3. This launcher
does what that plugin's local ``ray`` launcher does with Ray alone: connect to ``address`` (``None`` starts a
local instance; ``auto`` or ``ray://HOST:10001`` joins a cluster), then run every job with Hydra's own
``run_job`` inside a Ray task, one CPU each unless ``remote`` says otherwise.
"""

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from omegaconf import DictConfig, OmegaConf, open_dict

# No `from __future__ import annotations` here: Hydra imports plugins while scanning, before the module is in
# sys.modules, and dataclasses then cannot resolve string annotations; OmegaConf needs the real types anyway.

log = logging.getLogger(__name__)


@dataclass
class RayLauncherConf:
    _target_: str = "hydra_plugins.rlplug_ray_launcher.RayLauncher"
    address: Optional[str] = None  # None: a local Ray instance; "auto" or "ray://HOST:10001": a running cluster
    init: Dict[str, Any] = field(default_factory=dict)  # more ray.init() arguments (num_cpus, runtime_env, ...)
    remote: Dict[str, Any] = field(default_factory=lambda: {"num_cpus": 1})  # ray.remote() options per job


ConfigStore.instance().store(group="hydra/launcher", name="rlplug_ray", node=RayLauncherConf, provider="rlplug")


def _run_one(hydra_context: Any, task_function: Any, sweep_config: DictConfig, singleton_state: Any) -> JobReturn:
    """Inside the Ray task: Hydra's singletons (the config store with rlplug's recipes) as the launcher had them."""
    Singleton.set_state(singleton_state)
    setup_globals()
    return run_job(hydra_context=hydra_context, task_function=task_function, config=sweep_config,
                   job_dir_key="hydra.sweep.dir", job_subdir_key="hydra.sweep.subdir")


class RayLauncher(Launcher):
    def __init__(self, address: Optional[str] = None, init: Any = None, remote: Any = None) -> None:
        self.address = address
        self.init_kwargs = OmegaConf.to_container(init, resolve=True) if isinstance(init, DictConfig) else dict(init or {})
        self.remote_kwargs = OmegaConf.to_container(remote, resolve=True) if isinstance(remote, DictConfig) else dict(remote or {})
        self.config: Optional[DictConfig] = None
        self.hydra_context: Any = None
        self.task_function: Any = None

    def setup(self, *, hydra_context: Any, task_function: Any, config: DictConfig) -> None:
        self.config, self.hydra_context, self.task_function = config, hydra_context, task_function

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        import ray  # imported when a sweep runs: plugin discovery stays fast

        assert self.config is not None
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        if not ray.is_initialized():
            local = {"_node_ip_address": "127.0.0.1"} if self.address is None else {}  # a local instance stays local
            ray.init(address=self.address, **{**local, **self.init_kwargs})
        log.info(f"Launching {len(job_overrides)} jobs on Ray ({ray.get_runtime_context().gcs_address})")
        run = ray.remote(**self.remote_kwargs)(_run_one) if self.remote_kwargs else ray.remote(_run_one)
        state = Singleton.get_state()
        pending = []
        for number, overrides in enumerate(job_overrides, initial_job_idx):
            log.info(f"\t#{number} : {' '.join(filter_overrides(overrides))}")
            sweep_config = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
            with open_dict(sweep_config):
                sweep_config.hydra.job.id = f"ray_{number}"
                sweep_config.hydra.job.num = number
            pending.append(run.remote(self.hydra_context, self.task_function, sweep_config, state))
        return ray.get(pending)
