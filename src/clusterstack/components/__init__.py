"""Pulumi ComponentResources, one per module, per provider (see ../shared/GUIDE.md).

Components never read files or environment variables: the program passes them frozen
``Args`` built from the config model and the derived specs.
"""
