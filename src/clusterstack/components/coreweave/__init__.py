"""Components of a CoreWeave (CKS) cluster stack; all Kubernetes objects go through one
explicit ``kubernetes.Provider`` bound to the cluster's kube context."""
