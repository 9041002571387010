"""A Cloud Run service: everything comes from the stack config (``Pulumi.<stack>.yaml``);
``clusterstack deploy <service> rollout`` applies it (docs/deploying-services.md)."""

from clusterstack.programs.cloudrun import main

main()
