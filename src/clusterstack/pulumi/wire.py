"""Pulumi's wire constants, under one set of names.

A special value travels as a JSON object holding the signature key :data:`SIG_KEY` whose value
says what it is (pulumi/pulumi ``sdk/go/common/resource/sig/sig.go``: ``Key``, ``Secret``,
``ResourceReference``, ``OutputValue``, ``AssetSig``, ``ArchiveSig``; the Python SDK's
``pulumi.runtime.rpc`` uses the same strings). RegisterResource requests, stack exports and
checkpoints (``apitype.SecretV1``: ``{SIG_KEY: SECRET_SIG, "ciphertext" | "plaintext": …}``) and
engine events all use them. A value unknown during a preview is the string
:data:`UNKNOWN_SENTINEL` (``sdk/go/common/resource/plugin/rpc.go`` ``UnknownStringValue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SIG_KEY = "4dabf18193072939515e22adb298388d"       # sig.Key: the key of every special value
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"    # sig.Secret
RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"  # sig.ResourceReference
OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"    # sig.OutputValue
ASSET_SIG = "c44067f5952c0a294b673a41bacd8c17"     # sig.AssetSig
ARCHIVE_SIG = "0def7320c3a5731c473e5ecbe6d01bc7"   # sig.ArchiveSig
UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"  # plugin.UnknownStringValue


def is_special(value: Any) -> bool:
    """True for a special-value object (any signature)."""
    return isinstance(value, Mapping) and SIG_KEY in value


def is_secret(value: Any) -> bool:
    """True for a secret envelope ``{SIG_KEY: SECRET_SIG, …}``."""
    return isinstance(value, Mapping) and value.get(SIG_KEY) == SECRET_SIG
