"""The monitor's cached objects as data, never as code: JSON for structure, numpy's .npz for arrays.

Pickle runs code when it loads, so anyone able to write the cache directory could make the app run what
they wrote. Here a cached object is a JSON header describing it (dataclasses and pydantic models of
`core.monitor` only, named by module and class) plus the arrays it holds in an .npz archive read with
`allow_pickle=False`. Loading builds nothing but those classes from plain values; anything else is refused
and the entry is treated as a cache miss.

Arrays are stored compactly and exactly: integers in the narrowest type that holds every value, floats as
float32 when every value survives the round trip (TensorBoard's scalars are float32 to begin with), and
each is given back in its own type on loading. Nothing is rounded.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import struct

import numpy as np
from pydantic import BaseModel

MAGIC = b"SLIME-MONITOR-BLOB1\n"
ALLOWED_MODULES = "core.monitor."


class BlobError(ValueError):
    """The object cannot be written as a blob, or the bytes are not a blob this module wrote."""


def _class_name(obj) -> str:
    cls = type(obj)
    if not cls.__module__.startswith(ALLOWED_MODULES):
        raise BlobError(f"{cls.__module__}.{cls.__qualname__} is not a core.monitor type")
    return f"{cls.__module__}:{cls.__qualname__}"


def _encode(obj, arrays: list[np.ndarray]):
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise BlobError("arrays of Python objects are not stored")
        narrow = _narrowed(obj)
        arrays.append(obj if narrow is None else narrow)
        if narrow is None:
            return {"$nd": len(arrays) - 1}
        return {"$nd": len(arrays) - 1, "dtype": obj.dtype.str}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, list | tuple):
        return [_encode(v, arrays) for v in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise BlobError("only string keys are stored")
        return {"$dict": {k: _encode(v, arrays) for k, v in obj.items()}}
    if isinstance(obj, BaseModel):
        fields = {name: _encode(getattr(obj, name), arrays) for name in type(obj).model_fields}
        return {"$model": _class_name(obj), "fields": fields}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: _encode(getattr(obj, f.name), arrays) for f in dataclasses.fields(obj) if f.init}
        return {"$dc": _class_name(obj), "fields": fields}
    raise BlobError(f"{type(obj).__name__} is not stored")


_INT_TYPES = (np.int8, np.int16, np.int32)


def _narrowed(a: np.ndarray) -> np.ndarray | None:
    """The array in a smaller type that holds every value exactly, or None when there is none."""
    if a.size == 0:
        return None
    if a.dtype.kind in "iu" and a.dtype.itemsize > 1:
        lo, hi = int(a.min()), int(a.max())
        for t in _INT_TYPES:
            if np.dtype(t).itemsize < a.dtype.itemsize and np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
                return a.astype(t)
        return None
    if a.dtype == np.float64:
        with np.errstate(over="ignore", invalid="ignore"):
            small = a.astype(np.float32)
        back = small.astype(np.float64)
        same = (back == a) | (np.isnan(back) & np.isnan(a))
        return small if bool(same.all()) and bool((np.signbit(back) == np.signbit(a)).all()) else None
    return None


def _resolve(name: str) -> type:
    module_name, _, qualname = name.partition(":")
    if not module_name.startswith(ALLOWED_MODULES) or not qualname.isidentifier():
        raise BlobError(f"{name} is not a core.monitor type")
    cls = getattr(importlib.import_module(module_name), qualname, None)
    if not isinstance(cls, type) or not (issubclass(cls, BaseModel) or dataclasses.is_dataclass(cls)):
        raise BlobError(f"{name} is not a stored type")
    return cls


def _decode(node, arrays):
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    if "$nd" in node:
        a = arrays[f"a{int(node['$nd'])}"]
        return a.astype(np.dtype(str(node["dtype"]))) if "dtype" in node else a
    if "$dict" in node:
        return {k: _decode(v, arrays) for k, v in node["$dict"].items()}
    if "$model" in node:
        cls = _resolve(node["$model"])
        return cls.model_validate({k: _decode(v, arrays) for k, v in node["fields"].items()})
    if "$dc" in node:
        cls = _resolve(node["$dc"])
        return cls(**{k: _decode(v, arrays) for k, v in node["fields"].items()})
    raise BlobError("unknown node")


def dumps(obj) -> bytes:
    """The object as blob bytes; raises BlobError for anything that is not plain data of core.monitor."""
    arrays: list[np.ndarray] = []
    header = json.dumps(_encode(obj, arrays), ensure_ascii=False, allow_nan=True).encode("utf-8", "surrogatepass")
    buf = io.BytesIO()
    np.savez(buf, **{f"a{i}": a for i, a in enumerate(arrays)})
    return MAGIC + struct.pack("<Q", len(header)) + header + buf.getvalue()


def loads(data: bytes):
    """The object a blob holds; raises BlobError (or ValueError) when the bytes are not a valid blob."""
    if not data.startswith(MAGIC):
        raise BlobError("not a monitor blob")
    start = len(MAGIC) + 8
    (size,) = struct.unpack_from("<Q", data, len(MAGIC))
    header = json.loads(data[start:start + size].decode("utf-8", "surrogatepass"))
    with np.load(io.BytesIO(data[start + size:]), allow_pickle=False) as arrays:
        return _decode(header, {k: arrays[k] for k in arrays.files})
