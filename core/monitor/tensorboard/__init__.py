"""TensorBoard event files: the TFRecord framing and checksums, one file's scan, a directory's run.

Modules: `events`, `decode`, `crc`, `run`, `synthetic` (see core/monitor/__init__.py). Imports the monitor's shared
core (`core.monitor.scan`, `runs`, `cache`), never another source.
"""
