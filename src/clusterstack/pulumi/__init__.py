"""The Pulumi vocabulary: what clusterstack knows of Pulumi's names and documents, once.

- :mod:`~clusterstack.pulumi.urn` — THE URN rule: build (``resource.NewURN``) and parse;
- :mod:`~clusterstack.pulumi.tokens` — the table of type tokens of every resource the product
  declares, the stack type, and resource *families* (a Kubernetes kind at any version);
- :mod:`~clusterstack.pulumi.wire` — wire constants: the special-value signatures, the unknown
  sentinel;
- :mod:`~clusterstack.pulumi.values` — value normalising (``plan_value``) and secret masking;
- :mod:`~clusterstack.pulumi.paths` — the property-path grammar;
- :mod:`~clusterstack.pulumi.steps` — :class:`Step`, :class:`Diagnostic` (the one type), the op
  sets, the step-record rule (the URN decides the type);
- parsers, one per document format: :mod:`~clusterstack.pulumi.events` — THE engine event
  stream reader (live runs of the engine adapter and saved ``--event-log`` files, strict, typed
  :class:`~clusterstack.pulumi.events.EngineEvent` records), :mod:`~clusterstack.pulumi.preview`
  (``preview --json``), :mod:`~clusterstack.pulumi.state` (``stack export`` / checkpoint),
  :mod:`~clusterstack.pulumi.importfile` (``import --file``); :mod:`~clusterstack.pulumi.documents`
  tells a saved preview from an event log and judges whether a record is evidence
  (``check_usable``);
- :mod:`~clusterstack.pulumi.importids` — import IDs declared next to the resources.

Inside this package ``import pulumi`` still means the Pulumi SDK (absolute imports). No module
here imports the SDK at module level, and the event stream reader never imports it: the guard
and the parsers stay cheap to import; only :func:`~clusterstack.pulumi.importids.importable`
imports it, when called.
"""
