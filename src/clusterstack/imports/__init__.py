"""Adopting live resources: import IDs next to the resources, Pulumi bulk-import files built
from the offline plan, and the refusable, digest-confirmed import transaction.

- :mod:`clusterstack.imports.ids` — ``importable(resource, id)`` and the ID rules per family;
- :mod:`clusterstack.imports.importfile` — the ``pulumi import --file`` document, its canonical
  JSON and digest, and the checks on a file handed back to ``import apply``;
- :mod:`clusterstack.imports.generate` — plan → import file (scope, ``--id`` overrides);
- :mod:`clusterstack.imports.apply` — the transaction against an :class:`~clusterstack.engine.Engine`.

This package module imports nothing heavy: the plan runtime imports ``ids`` from here.
"""

from clusterstack.imports.ids import PLACEHOLDER, importable

__all__ = ["PLACEHOLDER", "importable"]
