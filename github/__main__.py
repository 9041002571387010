"""Pulumi entry point of the GitHub project (kind github in clusterstack.toml): the stack file
names the reviewed github.yaml."""

from pathlib import Path

from clusterstack.programs import main

main(Path(__file__).resolve().parent)
