"""The second pass over reviewed files, and the checks behind ``clusterstack validate``:
everything ``plan --all`` would reject, without running a program.

- :func:`load_cluster` — THE entry every command and program uses to get a fully checked
  cluster: the file and ``[defaults]`` (:mod:`clusterstack.config.cluster_file`), every derivation
  once, and the configs it references (a GCP stack's ``provisioning.gcp.gclb``:
  :mod:`clusterstack.validation.references`). :func:`cluster_problems` also checks, for
  ``validate CLUSTER``, the configs that *reference* CLUSTER (a bad audience in gcp-tpu-b is a
  problem of gcp-demo's plan);
- stack pointers: :func:`clusterstack.workspace.check_stacks` (it also rejects any key of a
  cluster stack file besides the pointer and Pulumi's own secrets keys);
- the ``[projects]`` configs: each stack's ``<project>:file`` loaded with the loader of the
  project's declared kind (:mod:`clusterstack.validation.projects`);
- the IAM file (:func:`clusterstack.iam.loader.load_iam`, which rejects plaintext ``user:``
  members) and that its ``project:`` is the ``[iam] stack``'s project
  (:func:`clusterstack.validation.iam.check_project`).

Every ``*_problems`` function returns :class:`~clusterstack.errors.Problem` rows (none when
valid).
"""

from clusterstack.validation.buckets import load_buckets
from clusterstack.validation.clusters import (cluster_problems, derive_all, load_all, load_cluster,
                                              load_references, referrers)
from clusterstack.validation.iam import check_project, iam_problems
from clusterstack.validation.projects import DOCUMENT_LOADERS, load_project_document, project_problems

__all__ = ["DOCUMENT_LOADERS", "check_project", "cluster_problems", "derive_all", "iam_problems",
           "load_all", "load_buckets", "load_cluster", "load_project_document", "load_references",
           "project_problems", "referrers"]
