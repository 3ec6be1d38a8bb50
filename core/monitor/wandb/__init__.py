"""W&B run files (`.wandb`, written by the SDK online or offline): records, one file's scan, runs by id.

Modules: `proto`, `log`, `run`, `config`, `synthetic` (see core/monitor/__init__.py). Imports the monitor's
shared core (`core.monitor.scan`, `runs`, `cache`), never another source (`synthetic` reuses the
TensorBoard scenarios so both sources hold the same values).
"""
