"""What ``rlplug losses`` shows for a TorchRL loss."""

from __future__ import annotations

from typing import Any


def describe_loss(*loss_classes: type, value_estimator: str) -> dict[str, Any]:
    """What ``rlplug losses`` shows for a TorchRL loss: the keys its ``set_keys`` accepts, and the value
    estimators it can use."""
    import dataclasses

    keys = {field.name for loss in loss_classes for field in dataclasses.fields(loss._AcceptedKeys)}
    return {"set_keys": sorted(keys), "value_estimator": value_estimator}
