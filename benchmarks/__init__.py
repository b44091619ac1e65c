"""relay_nb benchmarks: ``python -m benchmarks [name...]``. Not tests: they report, never assert."""
