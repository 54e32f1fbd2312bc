"""The task worker (``rouse work``): see :mod:`rouse.work.worker`."""
