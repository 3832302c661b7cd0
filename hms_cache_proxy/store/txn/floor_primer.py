"""Settle the floor of old TXNS rows right after start, not at the first calls.

The calls' own reads settle the floor of old TXNS rows (``txn_base.SettledTxns``) only with
two reads the open window apart. Until then open_txns with min-history on searches TXNS from
id 0 for the lowest open txn, and TXNS keeps the committed history until housekeeping removes
it: on a database with a long history a new instance's first seconds of opens were several
times slower (issue 23: the cache server, measured right after the database path's suite,
ran txn_open_commit at half the database path's speed). One daemon thread settles it at start
(``Txns.prime_settled_floor``: one read under TXN_LOCK_TBL, from the bound an unlocked read
found first, else the two reads) and ends.
"""

from __future__ import annotations

import logging
import threading

from hms_cache_proxy.store.txn.txns import Txns

log = logging.getLogger(__name__)


class FloorPrimer:
    """A short-lived daemon thread that sets ``txns``' settled floor after start."""

    def __init__(self, txns: Txns) -> None:
        self.txns = txns
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.primed = threading.Event()
        """Set once the floor is there (tests, observability)."""
        self.finished = threading.Event()
        """Set once the thread has ended, the floor set or not (its reads are over)."""

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="hms-txn-floor", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self.txns.prime_settled_floor(self._stop):
                self.primed.set()
        except Exception:  # noqa: BLE001 - the calls' own reads settle it later
            log.warning("could not settle the open-txn floor at start", exc_info=True)
        finally:
            self.finished.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
