"""Resident memory of an Atari-sized image replay buffer on each backend.

Builds the replay memory a DQN cell gets for ``Box(0, 255, (84, 84, 4), uint8)`` observations (skrl:
``rlplug.backends.skrl.replay_memory`` with the tensors skrl's DQN creates, filled through skrl's own
``add_samples`` from the float32 observations skrl's env wrapper hands out; TorchRL:
``rlplug.backends.torchrl.replay_buffer`` extended with collector-shaped uint8 batches), fills it with
``--transitions`` transitions and reports the process's resident set size (VmRSS) before and after.
Each backend runs in a fresh subprocess. Writes ``benchmarks/results/image_buffer_memory.json``.

    python benchmarks/image_buffer_memory.py                      # 100k transitions, both backends
    python benchmarks/image_buffer_memory.py --transitions 10000 --backend skrl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

SHAPE = (84, 84, 4)
FRAME_BYTES = 84 * 84 * 4
RESULTS = Path(__file__).resolve().parent / "results" / "image_buffer_memory.json"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def fake_build(transitions: int, num_envs: int):
    import gymnasium as gym
    import numpy as np

    return SimpleNamespace(
        observation_space=gym.spaces.Box(0, 255, SHAPE, np.uint8),
        action_space=gym.spaces.Discrete(6),
        settings={"buffer_size": transitions, "replay_storage": "memory", "batch_size": 32, "value_estimator": "td0"},
        num_envs=num_envs,
        device="cpu",
    )


def measure_skrl(transitions: int, num_envs: int) -> dict:
    import torch
    from rlplug.backends.skrl import replay_memory

    build = fake_build(transitions, num_envs)
    frames = torch.randint(0, 256, (4, num_envs, FRAME_BYTES)).float()  # what skrl's wrapper hands the agent
    before = rss_mb()
    memory = replay_memory(build)
    # the tensors skrl's DQN agent creates in init(), with the dtypes it asks for
    for name in ("observations", "next_observations"):
        memory.create_tensor(name=name, size=build.observation_space, dtype=torch.float32)
    memory.create_tensor(name="actions", size=build.action_space, dtype=torch.int64)
    memory.create_tensor(name="rewards", size=1, dtype=torch.float32)
    memory.create_tensor(name="terminated", size=1, dtype=torch.bool)
    allocated = rss_mb()
    start = time.perf_counter()
    actions = torch.zeros(num_envs, 1, dtype=torch.int64)
    rewards = torch.zeros(num_envs, 1)
    terminated = torch.zeros(num_envs, 1, dtype=torch.bool)
    for step in range(transitions // num_envs):
        memory.add_samples(
            observations=frames[step % 4], next_observations=frames[(step + 1) % 4], actions=actions, rewards=rewards,
            terminated=terminated,
        )
    seconds = time.perf_counter() - start
    after = rss_mb()
    batch = memory.sample(names=["observations"], batch_size=32)[0][0]
    return {
        "stored": len(memory),
        "observation_dtype": str(memory.tensors["observations"].dtype),
        "sampled_dtype": str(batch.dtype),
        "tensor_bytes": int(sum(t.numel() * t.element_size() for t in memory.tensors.values())),
        "rss_before_mb": before,
        "rss_allocated_mb": allocated,
        "rss_after_fill_mb": after,
        "fill_seconds": seconds,
    }


def measure_torchrl(transitions: int, num_envs: int) -> dict:
    import torch
    from rlplug.backends.torchrl import replay_buffer
    from rlplug.backends.torchrl.buffers import extend_quietly
    from rlplug.backends.torchrl.offpolicy import TRANSITION_KEYS
    from tensordict import TensorDict

    build = fake_build(transitions, num_envs)
    chunk = 1000
    frames = torch.randint(0, 256, (chunk + 1, *SHAPE), dtype=torch.uint8)  # GymWrapper keeps uint8 frames
    batch = TensorDict(
        {
            "observation": frames[:-1],
            "action": torch.zeros(chunk, dtype=torch.int64),
            "next": {
                "observation": frames[1:],
                "reward": torch.zeros(chunk, 1),
                "done": torch.zeros(chunk, 1, dtype=torch.bool),
                "terminated": torch.zeros(chunk, 1, dtype=torch.bool),
                "truncated": torch.zeros(chunk, 1, dtype=torch.bool),
            },
        },
        batch_size=[chunk],
    ).select(*TRANSITION_KEYS)
    before = rss_mb()
    buffer = replay_buffer(build)
    allocated = rss_mb()
    start = time.perf_counter()
    for _ in range(transitions // chunk):
        extend_quietly(buffer, batch)
    seconds = time.perf_counter() - start
    after = rss_mb()
    sample = buffer.sample()
    storage = buffer._storage._storage
    return {
        "stored": len(buffer),
        "observation_dtype": str(storage["observation"].dtype),
        "sampled_dtype": str(sample["observation"].dtype),
        "tensor_bytes": int(sum(t.numel() * t.element_size() for t in storage.values(True, True))),
        "rss_before_mb": before,
        "rss_allocated_mb": allocated,
        "rss_after_fill_mb": after,
        "fill_seconds": seconds,
    }


def child(backend: str, transitions: int, num_envs: int) -> None:
    result = (measure_skrl if backend == "skrl" else measure_torchrl)(transitions, num_envs)
    result["rss_delta_mb"] = result["rss_after_fill_mb"] - result["rss_before_mb"]
    result["bytes_per_transition"] = result["rss_delta_mb"] * 2**20 / transitions
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--backend", choices=("skrl", "torchrl", "both"), default="both")
    parser.add_argument("--child", choices=("skrl", "torchrl"), help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if args.child:
        child(args.child, args.transitions, args.num_envs)
        return
    backends = ("skrl", "torchrl") if args.backend == "both" else (args.backend,)
    report = {
        "observation_space": "Box(0, 255, (84, 84, 4), uint8)",
        "transitions": args.transitions,
        "num_envs": args.num_envs,
        "frame_bytes_uint8": FRAME_BYTES,
        "frame_bytes_float32": 4 * FRAME_BYTES,
        "float32_estimate_mb": 2 * 4 * FRAME_BYTES * args.transitions / 2**20,  # observation + next observation
        "uint8_estimate_mb": 2 * FRAME_BYTES * args.transitions / 2**20,
        "backends": {},
    }
    for backend in backends:
        done = subprocess.run(
            [sys.executable, __file__, "--child", backend, "--transitions", str(args.transitions), "--num-envs", str(args.num_envs)],
            capture_output=True, text=True, check=False,
        )
        if done.returncode:
            raise SystemExit(f"{backend}: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
        report["backends"][backend] = json.loads(done.stdout.strip().splitlines()[-1])
        r = report["backends"][backend]
        print(
            f"{backend:8s} {r['stored']} transitions, observations {r['observation_dtype']}: RSS {r['rss_before_mb']:.0f} MB -> "
            f"{r['rss_after_fill_mb']:.0f} MB (+{r['rss_delta_mb']:.0f} MB, {r['bytes_per_transition'] / 1024:.1f} KiB per "
            f"transition; float32 would be {report['float32_estimate_mb']:.0f} MB), filled in {r['fill_seconds']:.1f} s"
        )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
