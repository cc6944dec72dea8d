"""Development tooling: the benchmark (``python -m mangaka bench``) and the tiny GGUF writers
the tests use (``tiny_models``, which needs the dev-only ``gguf`` package).

Nothing at run time imports this package: the nodes never do, and the command line imports
``devtools.bench`` only inside its ``bench`` command.
"""
