"""``MultiAgentTrainerBase``: the ``TrainerBase`` of multi-agent cells."""

from __future__ import annotations

from ..envs.multiagent_evaluation import evaluate_multiagent
from ..errors import VideoUnsupportedError
from .trainer import TrainerBase


class MultiAgentTrainerBase(TrainerBase):
    """``TrainerBase`` for multi-agent cells: ``act_deterministic`` takes ``[B, n_agents, obs_dim]``
    observations and returns ``[B, n_agents(, act_dim)]`` actions; ``evaluate`` scores the mean
    per-agent episode return on a separate env (``evaluate_multiagent``). ``self.episodes`` is fed
    the per-step reward averaged over agents, so training returns are per-agent too.
    """

    def evaluate(self, episodes: int, video_dir: str | None = None) -> list[float]:
        build = self.build
        if video_dir is not None:  # MPE and VMAS render outside gymnasium's RecordVideo
            raise VideoUnsupportedError(
                f"video recording is for single-agent gymnasium environments only; {build.env_id} is multi-agent"
            )
        return evaluate_multiagent(build.env_id, build.env_kwargs, self.act_deterministic, episodes, build.seed)
