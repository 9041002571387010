"""Pulumi entry point of the bucket project: the stack file names the reviewed buckets.yaml."""

from pathlib import Path

from clusterstack.buckets.program import main

main(Path(__file__).resolve().parent)
