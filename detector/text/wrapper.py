"""C2PA 2.3's text wrapper as the detector sees it: characters to leave out.

A text carrying Content Credentials ends (by the specification; anywhere, when texts are
pasted together) with a ``C2PATextManifestWrapper``: U+FEFF, then one Unicode variation
selector per byte of its header and manifest store. Those characters are no words of the
text: every tokenization here leaves them out (``detector.text.tokenizers``), and offsets
into what is left are taken back to the text as given, so spans and heatmaps still point at
the words a reader sees. ``detector.credentials`` reads the wrapper itself."""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import NDArray

# U+FEFF and at least the 13 bytes of a wrapper's header, each as a variation selector
# (bytes 0-15: U+FE00-U+FE0F; 16-255: U+E0100-U+E01EF).
WRAPPER = re.compile("\ufeff[\ufe00-\ufe0f\U000e0100-\U000e01ef]{13,}")

Removed = tuple[tuple[int, int], ...]  # (position in the text left, characters removed there)


def without_wrappers(text: str) -> tuple[str, Removed]:
    """``text`` without any C2PA wrapper's characters, and where they were."""
    if "\ufeff" not in text:
        return text, ()
    kept, removed, last, gone = [], [], 0, 0
    for match in WRAPPER.finditer(text):
        kept.append(text[last : match.start()])
        removed.append((match.start() - gone, match.end() - match.start()))
        gone += match.end() - match.start()
        last = match.end()
    if not removed:
        return text, ()
    kept.append(text[last:])
    return "".join(kept), tuple(removed)


def restore_offsets(offsets: NDArray[np.int64], removed: Removed) -> NDArray[np.int64]:
    """``[n, 2]`` offsets into the text left, taken back to the text as given: a start at or
    past a removed wrapper's place moves past it, and so does an end past it."""
    if not removed or offsets.size == 0:
        return offsets
    out = offsets.copy()
    for place, length in removed:
        out[:, 0] += np.where(offsets[:, 0] >= place, length, 0)
        out[:, 1] += np.where(offsets[:, 1] > place, length, 0)
    return out


class StrippedEncoding:
    """A tokenizer's encoding of a text left without its wrappers: its ids, and its offsets
    in the text as given."""

    def __init__(self, encoding: object, removed: Removed) -> None:
        self._encoding = encoding
        self._removed = removed

    @property
    def ids(self) -> list[int]:
        return self._encoding.ids  # type: ignore[attr-defined, no-any-return]

    @property
    def offsets(self) -> NDArray[np.int64]:
        raw = np.asarray(self._encoding.offsets, np.int64).reshape(-1, 2)  # type: ignore[attr-defined]
        return restore_offsets(raw, self._removed)
