"""The command line, ``python -m mangaka COMMAND``: the surfaces layer, above the engine.

One module a command, each with ``add_parser(sub)`` (its parser; the declared options it shows
come from ``surfaces.py``) and ``run(args)`` (its inputs checked before any model loads, one call
into the engine, its output). ``COMMANDS`` is the registry: the commands' modules, in the order
``--help`` lists them; ``main.py`` builds the parser from it, dispatches, and turns every error
into one line. What several commands share: ``args.py`` (the model and request flags, opening the
LLM, reading a chapter), ``paths.py`` (output checks), ``export.py`` (``--export``).

Nothing in the engine imports this package.
"""

COMMANDS = (
    "write",
    "read",
    "demo",
    "bench",
    "page",
    "doctor",
    "book",
    "queue",
    "eval",
    "dataset",
    "schemas",
    "video",
)
