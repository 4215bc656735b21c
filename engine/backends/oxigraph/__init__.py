"""The embedded backend: a pyoxigraph store on disk (or in memory), every
role of a store over one database (``database.py``): the KG (``kg.py``),
runs (``runs.py``), corrections (``corrections.py``) and the loaders'
sink (``sink.py``)."""

from __future__ import annotations

from pathlib import Path

from engine.backends.oxigraph.corrections import OxigraphCorrections
from engine.backends.oxigraph.database import Database
from engine.backends.oxigraph.kg import OxigraphKG
from engine.backends.oxigraph.runs import OxigraphRunLog
from engine.backends.oxigraph.sink import OxigraphSink
from engine.graph import DEFAULT_POLICY, RelationPolicy
from engine.store import Store

__all__ = ["Database", "OxigraphCorrections", "OxigraphKG", "OxigraphRunLog", "OxigraphSink", "open_embedded"]


def open_embedded(path: Path | None, *, create: bool = False, policy: RelationPolicy = DEFAULT_POLICY,
                  read_only: bool = False) -> Store:
    """The embedded store in directory ``path`` (``None``: in memory), made
    when ``create``; :class:`engine.errors.StoreError` when it is missing,
    locked by another process (:class:`engine.errors.StoreBusyError`) or not
    a store. ``read_only``: a view of it as it is now, beside the process
    that writes it: it reads the KG, runs and corrections, loads nothing and
    refuses to record (one line)."""
    from engine.errors import StoreError

    if path is not None and create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create a store at {path}: {e.strerror or e}") from None
    if read_only and path is not None:
        db = Database(path, read_only=True)
        return Store(db.name, OxigraphKG(db, policy), OxigraphRunLog(db), OxigraphCorrections(db), None,
                     absent={"sink": f"{db.name} is in use by another process: nothing can be loaded until it is "
                                     "done"}, closers=[db.close])
    db = Database(path, create=create)
    corrections = OxigraphCorrections(db)
    if corrections.pending():
        corrections.recover()  # finish what a crash interrupted, before anything reads the KG
    runs = OxigraphRunLog(db)
    runs.fail_interrupted()  # runs a killed process left "running" (this open excludes any other writer)
    return Store(db.name, OxigraphKG(db, policy), runs, corrections, OxigraphSink(db), closers=[db.close])
