"""Policy export: a trainer's deterministic policy (``Trainer.export_policy``) written as one TorchScript
or ONNX file that runs with plain ``torch`` or ``onnxruntime``, read back, checked and evaluated.

The file's inputs are raw observation batches (``[B, *shape]``: float32 vectors, uint8 images as stored;
one input per key of a ``Dict`` space, in sorted key order; ``[B, n_agents, obs_dim]`` for a multi-agent
cell) and its one output, ``action``, is what ``act_deterministic`` returns (int64 indices for Discrete
actions, float32 inside the bounds for Box). A recurrent policy's file takes one more input and returns one
more output, ``hidden`` (float32 ``[B, layers, width]``, zeros at an episode's start; ONNX names the output
``next_hidden``: the contract in ``rlplug.backends.common.export``); read back, it carries that state from
one ``act`` to the next as ``act_deterministic`` does, and its check runs whole episodes beside the trainer.
Both formats carry the same JSON metadata: the run's recipe, algorithm, backend, environment and step
count, and the input / action (/ hidden) signature (``rlplug.backends.common.export.policy_signature``).
Torch and numpy are imported only when a function runs (the CLI's parser reads ``FORMATS``).
"""

from __future__ import annotations

import importlib.util
import json
import warnings
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ExportedFileError, ExportedFileVersionError, ExportUnsupportedError
from ..util.formats import other_format, rlplug_version
from ..util.outputs import EXPORTED_POLICY, write_file

FORMATS = ("torchscript", "onnx")
SUFFIXES = {"torchscript": ".pt", "onnx": ".onnx"}
EXPORT_FORMAT = 1
"""The metadata's ``rlplug_export``: the version of what an exported file holds and how it is called."""
METADATA_KEY = "rlplug.json"
"""Where the metadata lives: a TorchScript extra file, an ONNX ``metadata_props`` entry."""
TOLERANCE = 1e-5
"""The largest difference between the exported file's Box actions and ``act_deterministic``'s."""
CHECK_BATCH = 16
CHECK_EPISODES = 2
"""Whole episodes a recurrent policy's file is checked over, beside the trainer's acting."""
CHECK_CALLS = 3
"""Consecutive calls on made-up observations a recurrent file is checked over (its state carried)."""
ONNX_OPSET = 17


def check_format(fmt: str) -> None:
    """Refuse a format that cannot be written here, before anything is built."""
    if fmt not in FORMATS:
        raise ExportUnsupportedError(f"unknown export format '{fmt}'; choose {' or '.join(FORMATS)}")
    if fmt == "onnx":
        missing = [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]
        if missing:
            raise ExportUnsupportedError(f"--format onnx needs {' and '.join(missing)}: pip install 'rlplug[onnx]'")


def default_path(run_dir: Path, fmt: str) -> Path:
    return Path(run_dir) / f"policy{SUFFIXES[fmt]}"


CHECKED_KEY = "checked_max_abs_difference"
"""Metadata of a file whose actions were checked against the trainer's when it was written: the largest difference."""


def export_policy(build: Any, path: str | Path, fmt: str = "torchscript", check: bool = True,
                  inputs: Sequence[tuple[Path, str]] = (), metadata: Mapping[str, Any] | None = None,
                  record_check: bool = False) -> dict[str, Any]:  # fmt: skip
    """Write ``build.trainer``'s deterministic policy to ``path`` (atomically, and only over nothing or an
    earlier export: ``rlplug.util.outputs``, never over one of ``inputs``) and, with ``check``, read the file back
    and compare its actions with ``act_deterministic`` on ``CHECK_BATCH`` made-up observations, and a recurrent
    policy's over ``CHECK_EPISODES`` whole episodes as well (a file that disagrees is refused and never replaces
    what was there). ``metadata``: more entries for the file's metadata (the checkpoint a run's
    ``latest.policy.pt`` stands for); ``record_check`` (TorchScript, with ``check``) stores the check's largest
    difference in it too, as ``CHECKED_KEY``. Returns what was written: path, format, metadata and the largest action
    difference seen (``max_abs_difference``)."""
    import torch

    from ..backends.common.export import example_observations, policy_signature

    check_format(fmt)
    trainer = build.trainer
    module = trainer.export_policy()
    if not isinstance(module, torch.nn.Module):
        raise ExportUnsupportedError(f"{type(trainer).__name__}.export_policy returned a {type(module).__name__}, not a torch.nn.Module")
    signature = getattr(module, "signature", None) or policy_signature(build, hidden=getattr(trainer, "recurrent_state_shape", None))
    metadata = {**export_metadata(build, signature), **(metadata or {})}
    examples = [torch.as_tensor(a) for a in example_observations(signature, 2, seed=build.seed, hidden=True)]
    result = {"path": str(path), "format": fmt, "metadata": metadata, "max_abs_difference": None}

    def write(partial: Path) -> None:
        with _frozen(module) as frozen, torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer and legacy-exporter notes; the check below is what counts
            if fmt == "torchscript":
                traced = torch.jit.trace(frozen, tuple(examples), check_trace=False)
                torch.jit.save(traced, str(partial), _extra_files={METADATA_KEY: json.dumps(metadata)})
            else:
                _write_onnx(frozen, examples, signature, metadata, partial)
        if check:  # before the rename: a file that disagrees never replaces what was there
            exported = load_exported(partial)
            difference = check_against_trainer(exported, trainer, build.seed)
            if exported.recurrent:
                difference = max(difference, check_over_episodes(exported, build))
            result["max_abs_difference"] = difference
            if record_check and fmt == "torchscript":  # the same module, its metadata saying how it was checked
                torch.jit.save(traced, str(partial), _extra_files={METADATA_KEY: json.dumps({**metadata, CHECKED_KEY: difference})})

    write_file(Path(path), EXPORTED_POLICY, "export --out", write, inputs)
    return result


@contextmanager
def _frozen(module: Any) -> Iterator[Any]:
    """``module`` in eval mode with gradients off while it is traced and saved (the file then holds plain
    weights), its modes and flags given back afterwards: it shares the live trainer's networks, which a deep
    copy cannot always take (skrl models keep the last step's non-leaf tensors)."""
    modes = [(m, m.training) for m in module.modules()]
    flags = [(p, p.requires_grad) for p in module.parameters()]
    module.eval()
    for parameter, _ in flags:
        parameter.requires_grad_(False)
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training
        for parameter, flag in flags:
            parameter.requires_grad_(flag)


def _write_onnx(module: Any, examples: Sequence[Any], signature: dict[str, Any], metadata: dict[str, Any], path: Path) -> None:
    import onnx
    import torch

    from ..backends.common.export import HIDDEN, NEXT_HIDDEN

    names = [spec["name"] for spec in signature["inputs"]]
    outputs = ["action"]
    if HIDDEN in signature:
        names, outputs = [*names, HIDDEN], [*outputs, NEXT_HIDDEN]
    axes = {name: {0: "batch"} for name in [*names, *outputs]}
    # the TorchScript-based exporter: the dynamo one needs onnxscript, and these are small static graphs
    torch.onnx.export(module, tuple(examples), str(path), dynamo=False, input_names=names, output_names=outputs,
                      dynamic_axes=axes, opset_version=ONNX_OPSET)  # fmt: skip
    model = onnx.load(str(path))
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_KEY, json.dumps(metadata)
    onnx.save(model, str(path))


def export_metadata(build: Any, signature: dict[str, Any]) -> dict[str, Any]:
    recipe = build.recipe
    trainer = build.trainer
    return {
        "rlplug_export": EXPORT_FORMAT,
        "rlplug": rlplug_version(),
        "recipe": getattr(recipe, "ref", getattr(recipe, "name", "")),
        "algorithm": build.algorithm.name,
        "backend": build.backend,
        "env": build.env_id,
        "steps": int(trainer.progress),
        "step_unit": trainer.progress_unit,
        **signature,
    }


# ---- reading a file back ------------------------------------------------------------------------------


@dataclass
class ExportedFile:
    """An exported policy read back: ``act(observations)`` runs it on a batch (an array, or a Dict's mapping).

    A recurrent file (``recurrent``) carries its ``hidden`` state from one ``act`` to the next, one row per
    observation, zeros after ``reset_state()`` or when the batch size changes, as a trainer's
    ``act_deterministic`` does; ``step(observations, hidden)`` runs it once with a state of the caller's."""

    path: Path
    format: str
    metadata: dict[str, Any]
    runner: Any
    hidden: Any = field(default=None, repr=False)

    @property
    def input_names(self) -> list[str]:
        return [spec["name"] for spec in self.metadata["inputs"]]

    @property
    def recurrent(self) -> bool:
        return "hidden" in self.metadata

    def reset_state(self) -> None:
        self.hidden = None

    def inputs(self, observations: Any) -> list[Any]:
        import numpy as np

        names = self.input_names
        parts = [observations[name] for name in names] if isinstance(observations, Mapping) else [observations]
        if len(parts) != len(names):
            raise ExportedFileError(f"{self.path} takes {len(names)} inputs ({', '.join(names)}), got {len(parts)}")
        return [np.ascontiguousarray(np.asarray(p), dtype=spec["dtype"]) for p, spec in zip(parts, self.metadata["inputs"])]

    def act(self, observations: Any) -> Any:
        """The actions for a batch of observations, as a numpy array; refused unless they are what the
        metadata declares (dtype, shape, inside Discrete(n) or the Box's bounds). A recurrent file acts from
        the state its previous call left (zeros to begin with)."""
        if not self.recurrent:
            return self.step(observations)[0]
        import numpy as np

        batch = len(self.inputs(observations)[0])
        if self.hidden is None or len(self.hidden) != batch:
            self.hidden = np.zeros([batch, *self.metadata["hidden"]["shape"][1:]], dtype=np.float32)
        actions, self.hidden = self.step(observations, self.hidden)
        return actions

    def step(self, observations: Any, hidden: Any = None) -> tuple[Any, Any]:
        """``(actions, next hidden)`` for a batch of observations (and a recurrent file's ``hidden``, a float32
        ``[B, layers, width]`` array); ``next hidden`` is ``None`` for a feed-forward file."""
        import numpy as np

        arrays = self.inputs(observations)
        names = self.input_names
        if self.recurrent:
            arrays, names = [*arrays, np.ascontiguousarray(hidden, dtype=np.float32)], [*names, "hidden"]
        if self.format == "onnx":
            outputs = self.runner.run(["action", "next_hidden"] if self.recurrent else ["action"], dict(zip(names, arrays)))
        else:
            import torch

            with torch.no_grad():
                returned = self.runner(*(torch.from_numpy(a) for a in arrays))
            outputs = list(returned) if isinstance(returned, (tuple, list)) else [returned]
            if len(outputs) != (2 if self.recurrent else 1) or not all(isinstance(o, torch.Tensor) for o in outputs):
                wanted = "(action, hidden) tensors" if self.recurrent else "an action tensor"
                raise ExportedFileError(f"{self.path} returns {type(returned).__name__}, not {wanted}")
            outputs = [o.numpy() for o in outputs]
        actions = outputs[0]
        problem = action_problem(self.metadata["action"], actions, len(arrays[0]))
        if problem:
            declared = describe_action(self.metadata["action"])
            raise ExportedFileError(f"{self.path} returns actions that do not fit its metadata's {declared}: {problem}")
        if not self.recurrent:
            return actions, None
        next_hidden = outputs[1]
        shape = [len(arrays[0]), *self.metadata["hidden"]["shape"][1:]]
        if list(next_hidden.shape) != shape or next_hidden.dtype != np.float32:
            raise ExportedFileError(f"{self.path} returns a hidden state {next_hidden.dtype} {list(next_hidden.shape)}; "
                                    f"its metadata declares float32 {shape}")  # fmt: skip
        return actions, next_hidden


ZIP_MAGIC = b"PK\x03\x04"
"""How a TorchScript file (a zip archive) begins."""
PROBE_BATCH = 2
"""Observations a file is run on when it is read, to check it against its own metadata."""


def load_exported(path: str | Path) -> ExportedFile:
    """Read a TorchScript or ONNX file written by ``export_policy`` (the format is told by the file itself,
    whatever its name), check its metadata and run it once on inputs of the shapes the metadata declares:
    a truncated, forged or foreign file is one ``ExportedFileError`` line saying which it is."""
    path = Path(path)
    if not path.is_file():
        raise ExportedFileError(f"exported policy {path} does not exist" if not path.exists() else f"exported policy {path} is not a file")
    with path.open("rb") as handle:
        head = handle.read(8)
    if not head:
        raise ExportedFileError(f"{path} is not an exported policy: it is empty")
    if head.startswith(ZIP_MAGIC):
        if not zipfile.is_zipfile(path):
            raise ExportedFileError(f"{path} is a truncated or damaged TorchScript file: a zip archive without its end; export it again")
        exported = _load_torchscript(path)
    elif _looks_like_onnx(head):
        exported = _load_onnx(path)
    else:
        raise ExportedFileError(f"{path} is not an exported policy: neither a TorchScript (zip) nor an ONNX file")
    _check_runs(exported)
    return exported


def _looks_like_onnx(head: bytes) -> bool:
    """An ONNX ``ModelProto`` begins with its ``ir_version`` (field 1, a small varint), then a field up to
    ``graph`` (7) or ``opset_import`` (8); torch writes ``08 08 12 07 pytorch``."""
    return len(head) >= 3 and head[0] == 0x08 and 1 <= head[1] <= 0x7F and head[2] in (0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42)


def _load_torchscript(path: Path) -> ExportedFile:
    import torch

    extra = {METADATA_KEY: ""}
    try:
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    except Exception as err:  # noqa: BLE001 - a zip that is not TorchScript (a checkpoint, an archive), or a damaged one
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
        if any("/code/" in name for name in names):
            raise ExportedFileError(f"{path} is a damaged TorchScript file ({_first_line(err)}); export it again") from None
        what = " (a torch.save file, like a checkpoint: `rlplug export RUN_DIR` writes the policy)" if any(
            name.endswith("/data.pkl") for name in names) else ""
        raise ExportedFileError(f"{path} is not an exported policy: a zip archive, but not a TorchScript module{what}") from None
    return ExportedFile(path, "torchscript", _metadata(path, extra[METADATA_KEY]), module.eval())


def _load_onnx(path: Path) -> ExportedFile:
    if importlib.util.find_spec("onnxruntime") is None:
        raise ExportUnsupportedError(f"{path} is an ONNX file; reading it needs onnxruntime: pip install 'rlplug[onnx]'")
    import onnxruntime

    try:
        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own untyped errors for any bad file
        reason = _first_line(err).rpartition(":")[2].strip().rstrip(".") or type(err).__name__
        raise ExportedFileError(f"{path} is a truncated or damaged ONNX file (onnxruntime: {reason}); export it again") from None
    props = session.get_modelmeta().custom_metadata_map
    exported = ExportedFile(path, "onnx", _metadata(path, props.get(METADATA_KEY, "")), session)
    declared = [spec["name"] for spec in exported.metadata["inputs"]] + (["hidden"] if exported.recurrent else [])
    returned = ["action", "next_hidden"] if exported.recurrent else ["action"]
    names = [node.name for node in session.get_inputs()]
    outputs = [node.name for node in session.get_outputs()]
    if names != declared or not set(returned) <= set(outputs):
        raise ExportedFileError(
            f"{path} does not match its own metadata: the graph takes {', '.join(names) or 'nothing'} and returns "
            f"{', '.join(outputs) or 'nothing'}; its metadata says {', '.join(declared)} -> {', '.join(returned)}"
        )
    return exported


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _metadata(path: Path, text: Any) -> dict[str, Any]:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    try:
        metadata = json.loads(text) if text else None
    except ValueError:
        metadata = None
    if isinstance(metadata, dict) and "rlplug_export" in metadata and metadata["rlplug_export"] != EXPORT_FORMAT:
        writer = metadata.get("rlplug")
        raise ExportedFileVersionError(other_format(f"exported policy {path}", metadata["rlplug_export"],
                                                    str(writer) if writer is not None else None, EXPORT_FORMAT,
                                                    "export format", "run it with that rlplug, or export it again"))
    if not isinstance(metadata, dict) or "inputs" not in metadata or "action" not in metadata:
        raise ExportedFileError(f"{path} is not a policy exported by rlplug (no {METADATA_KEY} metadata)")
    problem = _signature_problem(metadata)
    if problem:
        raise ExportedFileError(f"{path} has damaged {METADATA_KEY} metadata: {problem}")
    return metadata


def _signature_problem(meta: dict[str, Any]) -> str | None:
    """What is wrong with the metadata's input and action signature (everything read later), or ``None``."""

    def shape_ok(shape: Any) -> bool:
        return isinstance(shape, list) and shape[:1] == ["B"] and all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape[1:])

    inputs, action = meta["inputs"], meta["action"]
    if not isinstance(inputs, list) or not inputs:
        return f"'inputs' is {inputs!r}, not a list of inputs"
    for spec in inputs:
        if not (isinstance(spec, dict) and isinstance(spec.get("name"), str) and spec.get("dtype") in ("float32", "uint8")
                and shape_ok(spec.get("shape"))):
            return f"input {spec!r} is not {{name, dtype float32 or uint8, shape [B, ...]}}"
    if not (isinstance(action, dict) and shape_ok(action.get("shape"))):
        return f"'action' is {action!r}, not {{kind, dtype, shape [B, ...]}}"
    hidden = meta.get("hidden")
    if hidden is not None and not (isinstance(hidden, dict) and hidden.get("dtype") == "float32" and shape_ok(hidden.get("shape"))
                                   and len(hidden["shape"]) == 3 and min(hidden["shape"][1:]) >= 1):
        return f"'hidden' is {hidden!r}, not {{name, dtype float32, shape [B, layers, width]}}"
    if action.get("kind") == "discrete":
        n = action.get("n")
        if action.get("dtype") != "int64" or not isinstance(n, int) or isinstance(n, bool) or n < 1:
            return f"'action' {action!r} is not a discrete action (int64, n >= 1)"
    elif action.get("kind") == "box":
        bounds = [action.get("low"), action.get("high")]
        if action.get("dtype") != "float32" or not all(
                isinstance(b, list) and b and all(isinstance(v, (int, float)) for v in b) for b in bounds):
            return f"'action' {action!r} is not a box action (float32, low, high)"
    else:
        return f"'action' has kind {action.get('kind')!r}, not 'discrete' or 'box'"
    return None


def _check_runs(exported: ExportedFile) -> None:
    """Run ``exported`` once on zeros of the shapes its metadata declares: a file whose network takes other
    inputs or returns other actions than its metadata says (a forged or edited file) is refused here,
    before it meets an environment."""
    import numpy as np

    inputs = [np.zeros([PROBE_BATCH, *spec["shape"][1:]], dtype=spec["dtype"]) for spec in exported.metadata["inputs"]]
    batch = inputs[0] if len(inputs) == 1 and exported.input_names == ["observation"] else dict(zip(exported.input_names, inputs))
    try:
        exported.reset_state()
        exported.act(batch)
        exported.reset_state()
    except ExportedFileError:
        raise
    except Exception as err:  # noqa: BLE001 - torch and onnxruntime raise their own errors for a mismatch
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]  # TorchScript's reason comes last
        reason = lines[-1].removeprefix("RuntimeError: ") if lines else type(err).__name__
        raise ExportedFileError(
            f"{exported.path} does not run on the inputs its metadata declares ({describe_inputs(exported.metadata['inputs'])}): {reason}"
        ) from None


def check_against_trainer(exported: ExportedFile, trainer: Any, seed: int = 0) -> float:
    """The largest difference between ``exported``'s actions and ``trainer.act_deterministic``'s on
    ``CHECK_BATCH`` made-up observations (a recurrent file's: over ``CHECK_CALLS`` calls from a reset, the
    state carried on both sides); refused when a Discrete action differs or a Box one by more than
    ``TOLERANCE``."""
    from ..backends.common.export import as_observation_batch, example_observations

    arrays = example_observations(exported.metadata, CHECK_BATCH, seed=seed + 1)
    observations = as_observation_batch(exported.metadata, arrays)
    exported.reset_state()
    trainer.reset_acting_state()
    return max(compare_actions(exported, trainer, observations)[0] for _ in range(CHECK_CALLS if exported.recurrent else 1))


def check_over_episodes(exported: ExportedFile, build: Any, episodes: int = CHECK_EPISODES) -> float:
    """The largest difference between a recurrent file's actions and its trainer's deterministic acting over
    ``episodes`` whole episodes of ``build``'s evaluation env (the trainer's actions step the env; both reset
    at each episode's start and carry their hidden state through it); refused as ``check_against_trainer``."""
    from ..envs.evaluation import evaluate_policy

    trainer, largest = build.trainer, [0.0]

    def act(observations: Any) -> Any:
        difference, actions = compare_actions(exported, trainer, observations)
        largest[0] = max(largest[0], difference)
        return actions

    def reset() -> None:
        exported.reset_state()
        trainer.reset_acting_state()

    evaluate_policy(build.env_spec, None, act, episodes, build.seed, reset=reset)
    reset()
    return largest[0]


def compare_actions(exported: ExportedFile, trainer: Any, observations: Any) -> tuple[float, Any]:
    """One call of each on ``observations``: the largest action difference (refused beyond the tolerance)
    and the trainer's actions."""
    import numpy as np

    got = exported.act(observations)
    want = np.asarray(trainer.act_deterministic(observations))
    if got.shape != want.shape:
        raise ExportUnsupportedError(
            f"the exported policy returns actions of shape {list(got.shape)}, act_deterministic {list(want.shape)}; "
            f"{type(trainer).__name__}.export_policy does not match its act_deterministic"
        )
    difference = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
    discrete = exported.metadata["action"]["kind"] == "discrete"
    if (discrete and difference != 0.0) or difference > TOLERANCE:
        raise ExportUnsupportedError(
            f"the exported policy's actions differ from act_deterministic's by up to {difference:.3g}; "
            f"{type(trainer).__name__}.export_policy does not match its act_deterministic"
        )
    return difference, want


# ---- evaluating a file on a run's environment -----------------------------------------------------------


def check_fits(exported: ExportedFile, build: Any) -> None:
    """Refuse a file exported for another environment, or whose inputs or action (names, dtypes, shapes,
    action count or bounds) are not those of ``build``'s spaces."""
    from ..backends.common.export import policy_signature

    meta = exported.metadata
    wanted = policy_signature(build)
    if meta["inputs"] != wanted["inputs"]:
        differs = f"it takes {describe_inputs(meta['inputs'])}, the run's environment gives {describe_inputs(wanted['inputs'])}"
    elif meta["action"] != wanted["action"]:
        differs = f"it returns {describe_action(meta['action'])}, the run's environment takes {describe_action(wanted['action'])}"
    elif meta.get("env") != build.env_id:
        differs = "its spaces match, but the environment is another"
    else:
        return
    raise ExportedFileError(
        f"{exported.path} was exported from {meta.get('recipe', '?')} on {meta.get('env', '?')}; it does not fit this run's "
        f"environment {build.env_id}: {differs}"
    )


def describe_action(spec: dict[str, Any]) -> str:
    """``action int64 [B] in Discrete(2)``, ``action float32 [B, 1] in [-2.0, 2.0]``."""
    if spec["kind"] == "discrete":
        return f"action {describe_tensor(spec)} in Discrete({spec['n']})"
    low, high = spec["low"], spec["high"]
    bounds = f"[{low[0]}, {high[0]}]" if len(set(low)) == 1 and len(set(high)) == 1 else f"[{low}, {high}]"
    return f"action {describe_tensor(spec)} in {bounds}"


def action_problem(spec: dict[str, Any], actions: Any, batch: int) -> str | None:
    """What is wrong with ``actions`` (a numpy array for ``batch`` observations) for the declared ``spec``."""
    import numpy as np

    shape = [batch, *spec["shape"][1:]]
    if not isinstance(actions, np.ndarray) or list(actions.shape) != shape or str(actions.dtype) != spec["dtype"]:
        got = f"{actions.dtype} {list(actions.shape)}" if isinstance(actions, np.ndarray) else type(actions).__name__
        return f"got {got} for {batch} observations"
    if not actions.size:
        return None
    if spec["kind"] == "discrete":
        low, high = 0, spec["n"] - 1
    else:  # the loosest bounds: a multi-agent action's per-agent bounds need no broadcasting then
        low, high = min(spec["low"]), max(spec["high"])
    if not np.all(np.isfinite(actions)) or actions.min() < low - TOLERANCE or actions.max() > high + TOLERANCE:
        return f"values from {actions.min()} to {actions.max()}, outside [{low}, {high}]"
    return None


def describe_inputs(inputs: Sequence[dict[str, Any]]) -> str:
    """``observation float32 [B, 4]`` for each input, comma-separated."""
    return ", ".join(f"{spec['name']} {describe_tensor(spec)}" for spec in inputs)


def describe_tensor(spec: dict[str, Any]) -> str:
    return f"{spec['dtype']} [{', '.join(str(d) for d in spec['shape'])}]"


def evaluate_exported(build: Any, exported: ExportedFile, episodes: int, video_dir: str | None = None) -> list[float]:
    """Deterministic episodes of the exported file on ``build``'s environment, seeded as ``Trainer.evaluate``
    seeds them, so the file and the trained run are scored on the same episodes."""
    check_fits(exported, build)
    multiagent = build.extras.get("multiagent")
    if multiagent is not None:
        from ..errors import VideoUnsupportedError
        from ..envs.multiagent_evaluation import evaluate_multiagent

        if video_dir is not None:
            raise VideoUnsupportedError(
                f"video recording is for single-agent gymnasium environments only; {build.env_id} is multi-agent"
            )
        return evaluate_multiagent(build.env_id, build.env_kwargs, exported.act, episodes, build.seed)
    from ..envs.evaluation import evaluate_policy

    return evaluate_policy(build.env_spec, None, exported.act, episodes, build.seed, video_dir=video_dir, reset=exported.reset_state)
