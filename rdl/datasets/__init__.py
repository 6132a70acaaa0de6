"""Databases that ship with rdl (or with a package it installs), and generated ones.

Each module here is a dataset registered by name in rdl's ``pyproject.toml``
(entry point group ``rdl.datasets``), which is how ``rdl.connect(name)``
finds it without the db stage importing this package: see
:mod:`rdl.db.registry`.
"""
