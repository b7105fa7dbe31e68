"""How runs become queryable: a results location opened once (`ResultsStore`), its derived
cache (one summary row and the narrow rows per finished run, the claims table), built and
updated run by run, in worker processes when large. The questions pages and commands ask
are in `rageval_core.query`, which re-exports what its callers need from here.
"""
