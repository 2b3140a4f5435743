"""One module per stage: the work an entry script (workflow/scripts/<stage>.py) asks for, without Snakemake.

An entry script reads the snakemake object into a ``StageRun`` (shell.stage), calls one function here per stage,
and lets ``StageRun.finish`` write the placeholders and the status. Here sits the orchestration: gates on upstream
states, which parser and analysis run in which order, what is written where. ``imports`` checks the user's trees in
analyze mode (the <stage>_import parts); ``absent`` writes the stages analyze mode has nothing for.

The top of the import direction: a stage may import every other package; nothing imports a stage but another stage.
"""
