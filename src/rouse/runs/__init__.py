"""Agent runs: the one supervisor every run goes through (``sweep --run``, ``rouse work``).

``presets`` (how each agent CLI is started, as data), ``child`` (a command's
output drained, its last bytes kept, its process group stopped whole),
``supervisor`` (the small process that holds a run's locks and deadline and
outlives whoever started it) and ``handle`` (the starter's side of it). This
package knows nothing of wakes, digests or tasks: its callers build the prompt
and read the result.
"""
