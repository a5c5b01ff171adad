"""The repository's own promises: the README and docs/ stay true, lint and types stay clean,
the benchmarks still run."""
