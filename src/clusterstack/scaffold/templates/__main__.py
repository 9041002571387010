"""Pulumi entry point: the stack file names the cluster; the reviewed config is the truth."""

from pathlib import Path

from clusterstack.programs import main

main(Path(__file__).resolve().parent)
