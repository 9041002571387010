"""Pulumi entry point of the bucket project (kind buckets in clusterstack.toml): the stack file
names the reviewed buckets.yaml."""

from pathlib import Path

from clusterstack.programs import main

main(Path(__file__).resolve().parent)
