"""Test helpers shipped with the package: scripted models, stub servers, fixtures.

Nothing in the library imports this package; tests, notebooks and demos do.
"""
