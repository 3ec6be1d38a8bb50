"""The W&B record message (`wandb_internal.Record`), built from the protocol definitions the `wandb` package ships.

`import wandb.proto.wandb_internal_pb2` runs `wandb/__init__.py`, which takes seconds and sets up the SDK. This
module never imports or runs any `wandb` code: it finds the installed package on disk, reads the serialized
file descriptors out of its generated `*_pb2.py` sources as data (a bytes literal, read with
`ast.literal_eval`), and builds the message classes in a private descriptor pool, so that a real `import wandb`
elsewhere in the process is not disturbed. Field numbers in these definitions are stable across `wandb`
versions (protobuf compatibility), so any recent `wandb` reads files written by another version.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import lru_cache
from pathlib import Path

PROTO_FILES = ("wandb_base_pb2.py", "wandb_telemetry_pb2.py", "wandb_internal_pb2.py")
_SERIALIZED = re.compile(rb"AddSerializedFile\((b'(?:[^'\\]|\\.)*')\)", re.DOTALL)
INSTALL_HINT = ("Reading W&B run files needs the `wandb` package installed next to the app (its protocol "
                "definitions are read; nothing of W&B is started): pip install 'slime-assistant[wandb]' or "
                "pip install wandb.")


class WandbProtoUnavailable(RuntimeError):
    """The `wandb` package (or readable protocol definitions in it) is not installed."""


def _proto_dirs() -> list[Path]:
    """Directories of generated protocol modules in the installed `wandb`, best match for our protobuf first."""
    try:
        spec = importlib.util.find_spec("wandb")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise WandbProtoUnavailable(INSTALL_HINT)
    base = Path(next(iter(spec.submodule_search_locations))) / "proto"
    from google.protobuf import __version__ as pb_version

    major = pb_version.split(".", 1)[0]
    dirs = [base / f"v{major}"]
    dirs += sorted((d for d in base.glob("v*") if d.is_dir() and d not in dirs), reverse=True)
    dirs.append(base)
    return [d for d in dirs if all((d / f).is_file() for f in PROTO_FILES)]


def _serialized_descriptor(path: Path) -> bytes:
    match = _SERIALIZED.search(path.read_bytes())
    if match is None:
        raise WandbProtoUnavailable(f"{path.name} in the installed wandb holds no serialized descriptor. "
                                    + INSTALL_HINT)
    value = ast.literal_eval(match.group(1).decode("latin-1"))
    if not isinstance(value, bytes):
        raise WandbProtoUnavailable(INSTALL_HINT)
    return value


@lru_cache(maxsize=1)
def record_class():
    """The `Record` message class (raises WandbProtoUnavailable with an install hint when it cannot be built)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, empty_pb2, struct_pb2, timestamp_pb2
    from google.protobuf.message_factory import GetMessageClass

    problems = []
    for directory in _proto_dirs():
        pool = descriptor_pool.DescriptorPool()
        try:
            for known in (empty_pb2, struct_pb2, timestamp_pb2):
                proto = descriptor_pb2.FileDescriptorProto()
                known.DESCRIPTOR.CopyToProto(proto)
                pool.Add(proto)
            for name in PROTO_FILES:
                pool.AddSerializedFile(_serialized_descriptor(directory / name))
            return GetMessageClass(pool.FindMessageTypeByName("wandb_internal.Record"))
        except (WandbProtoUnavailable, TypeError, KeyError, ValueError, SyntaxError, OSError) as exc:
            problems.append(f"{directory.name}: {exc}")
    raise WandbProtoUnavailable(INSTALL_HINT + (f" (tried: {'; '.join(problems)})" if problems else ""))


@lru_cache(maxsize=1)
def peek_class():
    """A view of `Record` made for speed (our own schema over the same field numbers).

    A history row's items become three columns in one message: protobuf merges repeated occurrences of a
    singular message field, so every item's `key`, `nested_key` and `value_json` land, in order, in one
    repeated field each. Summary, config, metric, run and exit records are kept as raw bytes (parsed with
    the full `Record` only when needed). Other records (console output, system stats, ...) are skipped.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf.message_factory import GetMessageClass

    fdp = descriptor_pb2.FileDescriptorProto(name="slime_assistant/wandb_peek.proto",
                                             package="slime_assistant_peek", syntax="proto3")
    f = descriptor_pb2.FieldDescriptorProto
    columns = fdp.message_type.add(name="Columns")
    for name, number in (("key", 1), ("nested_key", 2), ("value_json", 16)):
        columns.field.add(name=name, number=number, type=f.TYPE_STRING, label=f.LABEL_REPEATED)
    history = fdp.message_type.add(name="History")
    history.field.add(name="item", number=1, type=f.TYPE_MESSAGE, label=f.LABEL_OPTIONAL,
                      type_name=".slime_assistant_peek.Columns")
    peek = fdp.message_type.add(name="Peek")
    peek.oneof_decl.add(name="kind")
    peek.field.add(name="history", number=2, type=f.TYPE_MESSAGE, label=f.LABEL_OPTIONAL,
                   type_name=".slime_assistant_peek.History", oneof_index=0)
    for name, number in (("summary", 3), ("config", 5), ("metric", 12), ("run", 17), ("exit", 18)):
        peek.field.add(name=name, number=number, type=f.TYPE_BYTES, label=f.LABEL_OPTIONAL, oneof_index=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return GetMessageClass(pool.FindMessageTypeByName("slime_assistant_peek.Peek"))


@lru_cache(maxsize=1)
def summary_class():
    """The `SummaryRecord` message class (for summary records kept as bytes by `peek_class`)."""
    from google.protobuf.message_factory import GetMessageClass

    return GetMessageClass(record_class().DESCRIPTOR.fields_by_name["summary"].message_type)
