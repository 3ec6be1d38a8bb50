"""The model's tokenizer and chat template, run in a worker process that can be stopped.

A chat template is a program (Jinja) written by whoever made the checkpoint or the upload: nested loops,
`'x' * 10**9` or a ten-megabyte output each ran for a minute and took gigabytes in the app's own process, and
one aborted it from Rust. So the tokenizer is loaded, and every template rendered and every prompt tokenized,
in one worker process per loaded tokenizer (started with multiprocessing's "forkserver" context, which forks
from a server that imported transformers once), under three bounds:

- time: each row's rendering gets `TemplateLimits.seconds` (a timer signal inside the worker; the parent
  stops the worker when the timer cannot fire, e.g. inside native code);
- memory: the worker's address space may grow `TemplateLimits.memory_mb` beyond what the loaded tokenizer
  takes (RLIMIT_AS, set in the worker);
- output size: a rendering longer than `TemplateLimits.output_chars` plus twice the row's own text is
  dropped.

A row that passes a bound becomes a `Stopped` result naming the bound; the worker is restarted when it was
stopped or died, and the rest of the batch goes on. One worker serves a whole data check (and, on the page,
every check with the same tokenizer): its start-up is paid once.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

WORKER_START_SECONDS = 120.0  # importing transformers and loading a tokenizer, on a loaded machine
TOKENIZE_SECONDS = 120.0  # one batch call of the tokenizer (batches are bounded by characters)
POLL_SECONDS = 0.05
BATCH_CHARS = 4_000_000  # renderings held in the worker before they are counted
KILL_GRACE_SECONDS = 2.0  # beyond the row's time limit, before the parent stops a worker whose timer is stuck
MAX_STOPS = 3  # after this many stopped rows the template is not run again for this check


class TemplateLimits(BaseModel):
    """The bounds one rendering (and the worker) runs under."""

    seconds: float = Field(default=5.0, gt=0, le=600)
    memory_mb: int = Field(default=2048, ge=64, le=65536)
    output_chars: int = Field(default=4 * 2**20, ge=1024)


class Job(NamedTuple):
    """One row for the worker: render `prompt` with the template (or take it as the text), then count it."""

    template: bool
    prompt: Any  # the message list or string given to apply_chat_template, or the text itself
    tools: list | None
    want_text: bool  # send the text's head back (for the rendered-prompt preview)
    chars: int  # the row's own text, for the output bound


class Result(NamedTuple):
    tokens: int | None  # None: not counted (see problem); -1: the tokenizer refused the text
    head: str | None = None  # the first PREVIEW_CHARS characters of the rendered text, when asked
    length: int = 0  # characters of the rendered text
    problem: str | None = None  # the template's own error, in its words
    stopped: str | None = None  # "time", "memory", "output" or "crash": the bound that stopped this row


class WorkerFailed(Exception):
    """The worker could not be started; the message is for people."""


# ---------------------------------------------------------------- the worker process ------------------------

class _Stop(BaseException):  # BaseException: no template or library handler swallows it
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Stop


def _address_space_mb() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _worker_main(conn: Any, progress: Any, directory: str, limits: dict, preview_chars: int,
                 batch_chars: int = BATCH_CHARS) -> None:
    """Runs in the worker: load the tokenizer, report what it is, then answer batches until told to stop."""
    import signal

    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import huggingface_hub.constants as hub_constants
        from transformers import AutoTokenizer
    except ImportError:
        conn.send(("unusable", "The transformers library is not installed here (pip install transformers); "
                               "the row check still runs without token counts."))
        return
    hub_constants.HF_HUB_OFFLINE = True
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # transformers raises many kinds; each becomes one message in the parent
        conn.send(("failed", str(exc).strip() or type(exc).__name__))
        return
    info = {"kind": type(tokenizer).__name__, "vocab_size": len(tokenizer), "is_fast": bool(tokenizer.is_fast),
            "chat_template": bool(getattr(tokenizer, "chat_template", None)),
            "special_tokens": sorted({str(t) for t in getattr(tokenizer, "all_special_tokens", [])}
                                     | {str(t.content) for t in getattr(tokenizer, "added_tokens_decoder", {}).values()
                                        if getattr(t, "special", False)})[:200]}
    try:
        import resource

        budget = int((_address_space_mb() + limits["memory_mb"]) * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    except (ImportError, ValueError, OSError):
        pass
    signal.signal(signal.SIGALRM, _alarm)
    conn.send(("ready", info))
    state = _State(tokenizer, progress, preview_chars)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        jobs, kwargs, one_by_one, stops_left = message
        results: list[Result | None] = [None] * len(jobs)
        texts: list[tuple[int, str]] = []
        held = 0
        for i, job in enumerate(jobs):
            state.mark(i, 0)
            if stops_left <= 0 and job.template:
                results[i] = Result(None, stopped="skipped")
                continue
            text, failed = _render(tokenizer, job, kwargs, limits) if job.template else (job.prompt, None)
            if failed is not None:
                results[i] = failed
                stops_left -= failed.stopped is not None
                continue
            texts.append((i, text))
            held += len(text)
            if held >= batch_chars:  # renderings too long to hold at once: count these now
                state.count(texts, jobs, results, one_by_one)
                texts, held = [], 0
            text = None
        state.count(texts, jobs, results, one_by_one)
        texts = []
        conn.send(("done", results))


def _render(tokenizer: Any, job: Job, kwargs: dict, limits: dict) -> tuple[str | None, Result | None]:
    """The job's prompt rendered by the chat template under the time and output bounds (memory: RLIMIT_AS)."""
    import signal

    try:
        signal.setitimer(signal.ITIMER_REAL, limits["seconds"])
        try:
            text = tokenizer.apply_chat_template(job.prompt, tools=job.tools, tokenize=False,
                                                 add_generation_prompt=True, **kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Stop:
        return None, Result(None, stopped="time")
    except MemoryError:
        return None, Result(None, stopped="memory")
    except Exception as exc:  # the template's own error, whatever its class
        return None, Result(None, problem=(str(exc).strip() or type(exc).__name__)[:500])
    if not isinstance(text, str):
        return None, Result(None, problem="The chat template did not return text for this row.")
    if len(text) > limits["output_chars"] + 2 * job.chars:
        return None, Result(None, length=len(text), stopped="output")
    return text, None


class _State:
    """The worker's counting: one batch call of the tokenizer, as slime's filter makes it, or one text at a
    time to find the one it cannot take; every step is marked for the parent to watch."""

    def __init__(self, tokenizer: Any, progress: Any, preview_chars: int) -> None:
        self.tokenizer, self.progress, self.preview_chars = tokenizer, progress, preview_chars
        self.step = 0

    def mark(self, job: int, phase: int) -> None:
        self.step += 1
        self.progress[1], self.progress[2] = job, phase
        self.progress[0] = self.step

    def count(self, texts: list[tuple[int, str]], jobs: list[Job], results: list, one_by_one: bool) -> None:
        if not texts:
            return
        counts: list[int | None] = []
        if not one_by_one:
            self.mark(-1, 1)
            try:
                counts = [len(ids) for ids in self.tokenizer([t for _, t in texts], add_special_tokens=False,
                                                             return_attention_mask=False)["input_ids"]]
            except Exception:  # one text the tokenizer cannot take fails the whole call: find which
                counts = []
        if not counts:
            for i, text in texts:
                self.mark(i, 1)
                try:
                    counts.append(len(self.tokenizer([text], add_special_tokens=False,
                                                     return_attention_mask=False)["input_ids"][0]))
                except MemoryError:
                    counts.append(None)
                except Exception:
                    counts.append(-1)  # refused (a lone surrogate, for one)
        for (i, text), count in zip(texts, counts, strict=True):
            if count is None:
                results[i] = Result(None, length=len(text), stopped="memory")
            else:
                results[i] = Result(count, text[:self.preview_chars] if jobs[i].want_text else None, len(text))


# ---------------------------------------------------------------- the parent's handle -----------------------

_CONTEXT_LOCK = threading.Lock()


def _context() -> Any:
    """The forkserver context, its server importing transformers once (falls back to spawn where there is no
    forkserver).

    Only transformers is preloaded, never this app's own modules: Python 3.11's forkserver imports its
    preloads with its own sys.path (not the app's), which could find another copy of the app; each worker
    imports this module itself, after taking the app's sys.path."""
    with _CONTEXT_LOCK:
        try:
            ctx = multiprocessing.get_context("forkserver")
        except ValueError:
            return multiprocessing.get_context("spawn")
        ctx.set_forkserver_preload(["transformers"])
        return ctx


def _start_without_main(process: Any) -> None:
    """Start the process without the app's main module being run again in it.

    Processes of the spawn and forkserver kinds normally re-run the parent's __main__ module first (for
    Streamlit that is its command line, for `python -m core` the whole command); the worker needs none of it,
    so __main__'s name and file are hidden while the process's start-up data is taken.
    """
    main = sys.modules.get("__main__")
    if main is None:
        process.start()
        return
    with _CONTEXT_LOCK:
        saved = {k: main.__dict__[k] for k in ("__spec__", "__file__") if k in main.__dict__}
        try:
            main.__dict__["__spec__"] = None
            main.__dict__.pop("__file__", None)
            process.start()
        finally:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


def _stop_process(process: Any, conn: Any) -> None:
    try:
        conn.close()
    except OSError:
        pass
    if process.is_alive():
        process.kill()
    process.join(5)


def _remove(directory: Path) -> None:
    import shutil

    shutil.rmtree(directory, ignore_errors=True)


class TokenizerWorker:
    """The parent's handle on one worker: start it, send it batches, restart it after a stop."""

    def __init__(self, directory: Path, limits: TemplateLimits, preview_chars: int) -> None:
        """`directory` is the worker's private copy of the tokenizer files: it is loaded again from there when
        a worker is replaced, and removed when this handle is closed or collected."""
        self.directory = directory
        self._remover = weakref.finalize(self, _remove, directory)
        self.limits = limits
        self.preview_chars = preview_chars
        self.info: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._process: Any = None
        self._conn: Any = None
        self._progress: Any = None
        self._finalizer: Any = None
        self.starts = 0

    # -- life cycle -------------------------------------------------------------------------------
    def start(self) -> dict[str, Any]:
        """Start the worker and load the tokenizer in it; its description. Raises WorkerFailed, or ValueError
        with the tokenizer's own load error as text, for the caller to put in words."""
        ctx = _context()
        parent, child = ctx.Pipe()
        progress = ctx.Array("q", 3, lock=False)  # [steps, the job at (-1: the batch call), 0 rendering / 1 counting]
        process = ctx.Process(target=_worker_main, args=(child, progress, str(self.directory),
                                                        self.limits.model_dump(), self.preview_chars),
                              daemon=True, name="slime-assistant-tokenizer")
        try:
            _start_without_main(process)
        except OSError as exc:
            raise WorkerFailed(f"the tokenizer's worker process could not be started ({exc})") from None
        child.close()
        self.starts += 1
        deadline = time.monotonic() + WORKER_START_SECONDS
        while not parent.poll(POLL_SECONDS):
            if not process.is_alive() or time.monotonic() > deadline:
                late = time.monotonic() > deadline
                _stop_process(process, parent)
                raise WorkerFailed(f"loading the tokenizer took over {WORKER_START_SECONDS:g} s" if late else
                                   "the tokenizer's worker process stopped while loading the tokenizer")
        try:
            kind, payload = parent.recv()
        except (EOFError, OSError):
            _stop_process(process, parent)
            raise WorkerFailed("the tokenizer's worker process stopped while loading the tokenizer") from None
        if kind != "ready":
            _stop_process(process, parent)
            if kind == "unusable":
                raise WorkerFailed(payload)
            raise ValueError(payload)
        self._process, self._conn, self._progress = process, parent, progress
        self._finalizer = weakref.finalize(self, _stop_process, process, parent)
        self.info = payload
        return payload

    def close(self) -> None:
        with self._lock:
            self._drop()
            self._remover()

    def _drop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # stops the process, once
        self._process = self._conn = self._progress = self._finalizer = None

    # -- batches ----------------------------------------------------------------------------------
    def run(self, jobs: list[Job], kwargs: dict[str, Any], stops_left: int = MAX_STOPS) -> list[Result]:
        """Render and count every job; results in the jobs' order. A row that passes a bound comes back
        stopped (the worker is restarted when it had to be stopped) and the others go on; once `stops_left`
        rows were stopped, the rest come back stopped as "skipped" without running."""
        with self._lock:
            results: list[Result | None] = [None] * len(jobs)
            todo = list(range(len(jobs)))
            one_by_one = False
            while todo:
                if stops_left <= 0:
                    for i in todo:
                        results[i] = Result(None, stopped="skipped")
                    break
                outcome = self._exchange([jobs[i] for i in todo], kwargs, one_by_one, stops_left)
                if isinstance(outcome, list):
                    for i, result in zip(todo, outcome, strict=True):
                        results[i] = result
                    break
                index, why = outcome  # the worker was stopped, or died, at todo[index] (None: the batch call)
                if index is None and not one_by_one:
                    one_by_one = True  # count one by one to find the text the tokenizer cannot take
                    continue
                index = min(index or 0, len(todo) - 1)
                results[todo.pop(index)] = Result(None, stopped=why)
                stops_left -= 1
            return [r if r is not None else Result(None, stopped="skipped") for r in results]

    def _exchange(self, jobs: list[Job], kwargs: dict[str, Any], one_by_one: bool, stops_left: int
                  ) -> list[Result] | tuple[int | None, str]:
        """One batch to the worker and its answer, or (the job it was at, why) when it had to be stopped or
        died."""
        if self._process is None or not self._process.is_alive():
            self._drop()
            self.start()
        conn, progress, process = self._conn, self._progress, self._process
        progress[1], progress[2] = 0, 0  # a worker that dies before its first step was at the first job
        try:
            conn.send((jobs, kwargs, one_by_one, stops_left))
        except (RecursionError, pickle.PicklingError, TypeError):
            jobs = _sendable(jobs)
            conn.send((jobs, kwargs, one_by_one, stops_left))
        except (OSError, EOFError):
            self._drop()
            return (None, "crash")
        seen, since = progress[0], time.monotonic()
        while True:
            if conn.poll(POLL_SECONDS):
                try:
                    kind, payload = conn.recv()
                except (EOFError, OSError):
                    break
                return payload
            now = time.monotonic()
            if progress[0] != seen:
                seen, since = progress[0], now
            if not process.is_alive():
                break
            where = progress[1]
            rendering = progress[2] == 0 and 0 <= where < len(jobs) and jobs[where].template
            allowed = (self.limits.seconds + KILL_GRACE_SECONDS) if rendering else TOKENIZE_SECONDS
            if now - since > allowed:
                self._drop()
                return (where if where >= 0 else None, "time")
        where, counting = progress[1], progress[2] == 1
        self._drop()
        # Died: out of memory in native code, or aborted there (the tokenizer's Rust code aborts when an
        # allocation fails). While rendering, or counting one text alone, the job is known.
        return (where if where >= 0 and (not counting or one_by_one) else None, "crash")


def _sendable(jobs: list[Job]) -> list[Job]:
    """Jobs the pipe can carry: a prompt too deeply nested to pickle is sent as a render that fails."""
    out = []
    for job in jobs:
        try:
            pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
            out.append(job)
        except (RecursionError, pickle.PicklingError, TypeError):
            out.append(job._replace(template=True, prompt=None, tools=None))
    return out
