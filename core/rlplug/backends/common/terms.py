"""Loss-term bookkeeping every trainer shares, on either backend (imports torch only)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch


class TermMeans:
    """Sums loss terms as detached tensors (no ``.item()`` per gradient step) and reports their means,
    per term: a term present on some steps only (TD3's delayed actor) is averaged over those."""

    def __init__(self) -> None:
        self.sums: dict[str, torch.Tensor] = {}
        self.counts: dict[str, int] = {}

    def add(self, terms: Mapping[str, torch.Tensor], names: Iterable[str] | None = None) -> None:
        """Add ``terms[name]`` for each of ``names`` that is present (every term when ``names`` is None)."""
        for name in terms if names is None else names:
            value = terms.get(name)
            if value is None:
                continue
            value = value.detach()
            self.sums[name] = self.sums[name] + value if name in self.sums else value.clone()
            self.counts[name] = self.counts.get(name, 0) + 1

    def pop(self) -> dict[str, float]:
        """The means since the last ``pop`` (one device sync for all terms), then start over."""
        if not self.sums:
            return {}
        names = list(self.sums)
        values = torch.stack([self.sums[n].float().mean() for n in names]).tolist()
        means = {name: value / self.counts[name] for name, value in zip(names, values)}
        self.sums.clear()
        self.counts.clear()
        return means
