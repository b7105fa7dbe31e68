"""Benchmarks and the synthetic results they read (bench/synth.py); a package so tests
import its generator normally (`from bench.synth import generate`). Not shipped (pyproject
includes rageval_core and dashboard only)."""
