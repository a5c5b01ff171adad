"""Implementations nobody here wrote: the official conformance suite, the TypeScript SDK client,
an independent auditor, real hosts."""
