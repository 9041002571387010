"""Views: every result rendered once, as human text and as versioned JSON.

- :mod:`clusterstack.views.verdict` — THE verdict document: the guard's
  :class:`~clusterstack.guard.Verdict` over a set of steps, as text lines (``guard``, ``preview``,
  ``up``, CI's ``diff.txt``, service deploys) and as the versioned JSON document
  ``clusterstack.verdict/v1`` (``guard --json``, ``preview --json``, CI's ``meta.json`` and
  comment, and the review record); docs/reference/verdict.md;
- :mod:`clusterstack.views.preview` — the grouped, property-level diff of an engine preview
  (text and the ``preview --json`` document, which embeds the verdict document).

Views render; they decide nothing: a verdict comes from :func:`clusterstack.guard.check`, steps
from the one engine event stream (:mod:`clusterstack.pulumi.events`). The engine renders nothing.
"""
