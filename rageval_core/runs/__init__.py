"""The run folder: the one package that knows a run's files (see `layout`).

`layout` names every path and file of a run and checks run ids; `manifest`, `journal`
and `rows` are its files' contents and the row schema; `listing` and `reading` look at a
location and its runs without writing; `atomic`, `folder`, `lease` and `remote` write
them, and `job` is the writing of a whole run (lease, journal, pool, Ctrl-C) for the
runner and rescore. The runner, `RunWriter`, rescore and the importers are its clients.
"""
