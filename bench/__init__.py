"""Benchmarks: scripts that print JSON and keep it in bench/results/ (see README.md)."""
