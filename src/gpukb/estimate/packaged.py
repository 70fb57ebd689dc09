"""Loading a knowledge base: the packaged one (once per process), or the kb/ and rules/ of a checkout.

Its own module, below everything that asks, so that those (the package's `gpukb.ask`, sweep workers,
the command line) import it downwards; `gpukb.load_kb` and `gpukb.packaged_root` are these.
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path

from ..core.errors import KBError, Problem
from ..knowledge.kb import KnowledgeBase

# The packaged knowledge base once loaded (one per process: its root never changes). Returned as is
# afterwards: finding its files again (resolving this module's path, two stats) took ~50 µs, a
# twentieth of a single-GPU `gpukb.ask()`.
_packaged: KnowledgeBase | None = None
_packaged_lock = threading.Lock()


def packaged_root() -> Path:
    """Where the bundled kb/ and rules/ live: inside the wheel, or the source checkout."""
    here = Path(__file__).resolve().parents[1]  # src/gpukb, or gpukb/ in the wheel
    bundled = here / "_data"
    if (bundled / "kb" / "manifest.yaml").is_file():
        return bundled
    checkout = here.parent.parent
    if (checkout / "kb" / "manifest.yaml").is_file():
        return checkout
    raise KBError([Problem(str(bundled), 1, 1, "E004", "the packaged knowledge base is missing (kb/manifest.yaml)")])


def load_kb(path: str | Path | None = None) -> KnowledgeBase:
    """Load and validate a knowledge base: the packaged one, or kb/ and rules/ under `path`.

    Raises KBError listing every problem as file:line:column.
    """
    if path is not None:
        from ..core import safepath
        from ..knowledge.loader import read_checkout

        try:  # a name no folder can have is no knowledge base, not a traceback
            safepath.check_name(path)
            root = Path(path).resolve()
        except (safepath.RefusedPath, OSError, RuntimeError) as error:
            shown = str(path).encode("unicode_escape").decode("ascii")[:300]
            raise KBError([Problem("kb/manifest.yaml", 1, 1, "E004", f"no knowledge base at {shown}: {error}")]) from None
        return read_checkout(root)
    global _packaged
    if _packaged is None:
        with _packaged_lock:
            if _packaged is None:
                kb = _load_packaged(packaged_root())
                # Kept for the life of the process, so Python's full collections need never walk it again:
                # they took ~30 ms each, one in ~150 asks. (gc.freeze() moves every object tracked now to
                # the permanent generation, the application's too; gc.unfreeze() undoes it.)
                gc.freeze()
                _packaged = kb
    return _packaged


def _load_packaged(root: Path) -> KnowledgeBase:
    """The packaged knowledge base, from this user's private on-disk copy when it is current (kbcache)."""
    from ..knowledge import kbcache

    kb, fresh = kbcache.read(root)
    if kb is None:
        from ..knowledge.loader import read_checkout  # with the YAML parser: only when there is no current copy

        kb = read_checkout(root)
        if fresh is not None:
            from .validation import bands_of

            bands_of(kb)  # the error bands are derived once and stored with the copy: no later process derives them
            kbcache.write(fresh, kb)
    return kb
