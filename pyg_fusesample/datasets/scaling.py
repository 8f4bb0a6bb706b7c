"""Scaled-down sizes and names of the presets and stressors (``scale``)."""

from __future__ import annotations

import math


def _scaled(num_nodes: int, scale: float) -> int:
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"scale must be in (0, 1], got {scale}")
    return max(2, int(round(num_nodes * scale)))


def _scaled_max_degree(max_degree: float, scale: float,
                       num_nodes: int) -> float:
    # The natural maximum shrinks with the graph; sqrt(scale) keeps a clearly
    # heavy tail on tiny test graphs while staying below half the node count.
    return min(max_degree * math.sqrt(scale), 0.5 * (num_nodes - 1))


def _preset_name(base: str, scale: float) -> str:
    return base if scale == 1.0 else f"{base}(scale={scale:g})"
