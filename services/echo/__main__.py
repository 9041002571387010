"""echo: an IAP-gated Cloud Run service (clusterstack example service project).

Everything comes from the stack config (``Pulumi.<stack>.yaml``); ``clusterstack deploy echo
rollout`` adds ``echo:sourceRevision`` (the git commit) and ``echo:changeCause`` (the rollout
message) to a temporary copy, and they end up on the revision template so ``deploy echo
history`` can show where each retained revision came from. The program is the one every Cloud
Run service project runs (:mod:`clusterstack.programs.cloudrun`, what `clusterstack service
new` scaffolds).
"""

from clusterstack.programs.cloudrun import main

main()
