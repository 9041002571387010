"""IAM as reviewed code: the IAM file (``iam/iam.yaml``), encrypted principals, grants,
reviews, key rotation and service-account key audits.

Modules: :mod:`~clusterstack.iam.model` (schema), :mod:`~clusterstack.iam.loader` (file:line
validation), :mod:`~clusterstack.iam.canonical` (canonical writer and edits),
:mod:`~clusterstack.iam.crypto` (Tink deterministic AEAD, local or Cloud KMS keyset),
:mod:`~clusterstack.iam.ops` (the commands), :mod:`~clusterstack.iam.review`,
:mod:`~clusterstack.iam.scanner`, :mod:`~clusterstack.iam.audit`. Inside the Pulumi program:
:mod:`clusterstack.programs.iam`; the component is :mod:`clusterstack.components.gcp.iam`.
"""
