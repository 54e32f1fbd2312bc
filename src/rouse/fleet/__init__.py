"""The fleet: a ledger on PostgreSQL shared by many machines, and one view of many trees.

Nothing here is imported unless a ``postgresql://`` DSN is given (``--ledger``
or ``ROUSE_LEDGER``); psycopg (the ``pg`` extra) is loaded by :mod:`rouse.fleet.pg`
alone.
"""
