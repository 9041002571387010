"""Pulumi entry point of the GitHub project: the stack file names the reviewed github.yaml."""

from pathlib import Path

from clusterstack.github.program import main

main(Path(__file__).resolve().parent)
