"""What slime logs to TensorBoard at the pinned commit: groups, step counters, and the tags the checks read.

Facts (all at slime 624b824a):
- Every metric goes through `logging_utils.log(args, metrics, step_key)`, which drops the step key itself
  and hands the rest to SummaryWriter.add_scalar with that step (slime/observability/logging_utils.py:45-51).
- `rollout/*` (from both the rollout manager and the training actor), `perf/*`, `passrate/*` and
  `multi_turn/*` use step_key "rollout/step"; `eval/*` uses "eval/step"; both are
  `compute_rollout_step(args, rollout_id)`: the rollout id, or rollout_id * rollout_batch_size *
  n_samples_per_prompt // global_batch_size with --wandb-always-use-train-step
  (slime/observability/metric_utils.py:120-123, rollout_metrics.py:249-251 and 269-271,
  train_metric_utils.py:136-138 and 403-405).
- `train/*` uses "train/step" = rollout_id * num_steps_per_rollout + step_id, one point per optimizer step
  (slime/backends/megatron_utils/model.py:879 and 897-898).
- `rollout/rewards` is what the loss sees: for grpo/gspo/cispo/reinforce_plus_plus_baseline with
  --rewards-normalization it is the group-normalized reward, whose mean is ~0 by construction;
  `rollout/raw_reward` is the reward function's output (slime/ray/rollout.py:608-633 and 657-663).
"""

from __future__ import annotations

import math
import re
import shlex

from core.pins import slime_source

GROUP_ORDER = ("rollout", "train", "eval", "perf", "passrate", "multi_turn")
REWARD_TAGS = ("rollout/raw_reward", "rollout/rewards")
ENTROPY_TAGS = ("train/entropy_loss",)
KL_TAGS = ("train/kl_loss", "train/ppo_kl")
LOGPROB_DIFF_TAGS = ("train/train_rollout_logprob_abs_diff",)
LENGTH_TAGS = ("rollout/response_len/mean", "rollout/response_lengths")
TRUNCATION_TAGS = ("rollout/truncated_ratio", "rollout/truncated")
GRAD_NORM_TAGS = ("train/grad_norm",)
ROLLOUT_TIME_TAGS = ("perf/rollout_time", "perf/train_wait_time")
TRAIN_TIME_TAGS = ("perf/train_time", "perf/actor_train_time")
WAIT_RATIO_TAGS = ("perf/wait_time_ratio",)
GPU_PERF_TAGS = ("perf/tokens_per_gpu_per_sec", "perf/actor_train_tflops", "perf/actor_train_tok_per_s",
                 "perf/wait_time_ratio", "perf/log_probs_tflops")

SRC_LOG = slime_source("slime/observability/logging_utils.py", 45)
SRC_TB = slime_source("slime/observability/tensorboard_utils.py", 30)
SRC_ROLLOUT_STEP = slime_source("slime/observability/metric_utils.py", 120)
SRC_TRAIN_STEP = slime_source("slime/backends/megatron_utils/model.py", 879)
SRC_REWARD_NORM = slime_source("slime/ray/rollout.py", 608)
SRC_RAW_REWARD = slime_source("slime/ray/rollout.py", 663)
SRC_LOSS_KEYS = slime_source("slime/backends/megatron_utils/loss.py", 1142)
SRC_ENTROPY = slime_source("slime/backends/megatron_utils/loss.py", 1112)
SRC_KL_LOSS = slime_source("slime/backends/megatron_utils/loss.py", 1153)
SRC_PPO_KL = slime_source("slime/backends/megatron_utils/loss.py", 1033)
SRC_LOGPROB_DIFF = slime_source("slime/backends/megatron_utils/loss.py", 1136)
SRC_GRAD_NORM = slime_source("slime/backends/megatron_utils/model.py", 886)
SRC_TRUNCATED = slime_source("slime/observability/rollout_metrics.py", 55)
SRC_RESPONSE_LEN = slime_source("slime/observability/rollout_metrics.py", 48)
SRC_EVAL = slime_source("slime/observability/rollout_metrics.py", 232)
SRC_PERF = slime_source("slime/observability/train_metric_utils.py", 376)
SRC_WAIT_RATIO = slime_source("slime/observability/train_metric_utils.py", 395)
SRC_ROLLOUT_PERF = slime_source("slime/observability/rollout_metrics.py", 59)
SRC_TRAIN_WAIT = slime_source("slime/backends/megatron_utils/actor.py", 433)
SRC_TB_ARGS = slime_source("slime/utils/arguments.py", 1235)

ROLLOUT_STEPPED = re.compile(r"^(rollout|perf|eval|passrate|multi_turn)/")


def group_of(tag: str) -> str:
    """slime's metric group: the part before the first '/' (tags without one go to 'other')."""
    return tag.split("/", 1)[0] if "/" in tag else "other"


def ordered_tags(tags: list[str]) -> list[str]:
    """Tags grouped as slime groups them, reward curve first, then the rest of each group by name."""
    def key(tag: str) -> tuple:
        g = group_of(tag)
        rank = GROUP_ORDER.index(g) if g in GROUP_ORDER else len(GROUP_ORDER)
        reward_rank = REWARD_TAGS.index(tag) if tag in REWARD_TAGS else len(REWARD_TAGS)
        return (reward_rank, rank, g, tag)
    return sorted(tags, key=key)


MAX_FILTER_CHARS = 500
FILTER_HELP = ("Words separated by spaces or | (a tag matching any of them is shown); each is found anywhere in "
               "the tag, ignoring case; * stands for any run of characters and ? for one character. Not a "
               "regular expression.")


def filter_tags(tags: list[str], pattern: str) -> tuple[list[str], str | None]:
    """Tags matching the filter (FILTER_HELP): plain substrings with * and ? wildcards, never a regex.

    The user's text is never compiled: matching is a left-to-right scan, at most (tag length x filter
    length) character comparisons per tag, whatever the filter holds.
    """
    if not pattern.strip():
        return list(tags), None
    if len(pattern) > MAX_FILTER_CHARS:
        return list(tags), f"That filter is longer than {MAX_FILTER_CHARS} characters; showing every tag."
    terms = [t for t in re.split(r"[\s|]+", pattern.lower()) if t.strip("*")]
    if not terms:
        return list(tags), None
    return [tag for tag in tags if any(glob_search(term, tag.lower()) for term in terms)], None


def glob_search(term: str, text: str) -> bool:
    """Whether `term` (with * for any characters and ? for one) occurs anywhere in `text`.

    Segments between stars are found leftmost-first in order, which is exact for a pattern free at both
    ends; no backtracking, so the cost is bounded by len(text) x len(term).
    """
    pos = 0
    for segment in term.split("*"):
        if not segment:
            continue
        found = _find_segment(segment, text, pos)
        if found < 0:
            return False
        pos = found + len(segment)
    return True


def _find_segment(segment: str, text: str, start: int) -> int:
    if "?" not in segment:
        return text.find(segment, start)
    last = len(text) - len(segment)
    for i in range(start, last + 1):
        if all(c == "?" or c == text[i + k] for k, c in enumerate(segment)):
            return i
    return -1


def first_present(tags, candidates) -> str | None:
    present = set(tags)
    return next((t for t in candidates if t in present), None)


EVAL_DERIVED = re.compile(r"-(truncated_ratio|pass@\d+)$")


def eval_score_tags(tags: list[str]) -> list[str]:
    """`eval/<dataset>` mean-reward tags, whatever the dataset name (slime's own scripts use `retail-dev`).

    slime logs `eval/{key}` unchanged, beside `eval/{key}-truncated_ratio`, `eval/{key}-pass@{k}` (with
    --log-passrate) and per-sample metrics under `eval/{key}/`
    (slime/observability/rollout_metrics.py:232-246@624b824a); only
    those derived tags are left out.
    """
    return sorted(t for t in tags if t.startswith("eval/") and len(t) > 5 and "/" not in t[5:] and t != "eval/step"
                  and not EVAL_DERIVED.search(t))


CHECKLIST_TAGS = (REWARD_TAGS + KL_TAGS + ENTROPY_TAGS + LOGPROB_DIFF_TAGS + LENGTH_TAGS + TRUNCATION_TAGS
                  + GRAD_NORM_TAGS + ROLLOUT_TIME_TAGS + TRAIN_TIME_TAGS + WAIT_RATIO_TAGS + GPU_PERF_TAGS)


def checklist_tags(tags: list[str]) -> list[str]:
    """The tags the checklist reads (its curves, drawn first), in the order given."""
    wanted = set(CHECKLIST_TAGS) | set(eval_score_tags(tags))
    return [t for t in tags if t in wanted]


def infer_steps_per_rollout(rollout_steps, train_steps) -> tuple[int, int, str]:
    """(rollout step stride, optimizer steps per rollout, how it was decided) from the logged steps.

    Default stepping: rollout steps are rollout ids, train steps run k per rollout, so
    k = (last train step + 1) / (last rollout step + 1). With --wandb-always-use-train-step the rollout
    steps are multiples of rollout_batch_size * n_samples_per_prompt // global_batch_size, which is also
    the number of optimizer steps per rollout, so both divide by that stride.
    """
    r = sorted(set(int(s) for s in rollout_steps))
    t = sorted(set(int(s) for s in train_steps))
    if len(r) < 1 or len(t) < 1:
        return 1, 1, "not enough rollout and train points to relate them; using 1"
    stride = 0
    for a, b in zip(r, r[1:], strict=False):
        stride = math.gcd(stride, b - a)
    if stride > 1 and t[-1] < r[-1] + 2 * stride:
        return stride, stride, (f"rollout steps are multiples of {stride} (--wandb-always-use-train-step); "
                                f"{stride} optimizer step(s) per rollout")
    k = max(1, round((t[-1] + 1) / (r[-1] + 1)))
    return 1, k, f"last train step {t[-1]} and last rollout step {r[-1]} give {k} optimizer step(s) per rollout"


def draft_tensorboard_flags(project: str, experiment: str) -> str:
    """The launch-script lines that turn on slime's TensorBoard logging (a draft; nothing is run)."""
    return (f"--use-tensorboard \\\n--tb-project-name {shlex.quote(project)} \\\n"
            f"--tb-experiment-name {shlex.quote(experiment)}")


def draft_tensorboard_command(logdir: str, port: int = 6006) -> str:
    return f"tensorboard --logdir {shlex.quote(logdir)} --port {int(port)}"


GPU_WATCH_COMMANDS = (
    "nvidia-smi dmon -s u -d 5",
    "nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total --format=csv -l 5",
)
