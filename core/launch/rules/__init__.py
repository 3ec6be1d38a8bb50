"""The launch checker's rules, one module per family, and the registry that runs them.

- `registry`: the `@rule` decorator, RULES (code -> title, severity, source, card, check) and the runner;
- `context`: the argument words split into flags and values, and the typed facts a rule reads (RuleContext);
- families: `reading` (SCRIPT: what the bash reader noticed), `flags` (ARG: unknown, repeated, mistyped
  flags), `slime` (SLIME: slime's own start-up checks), `layout` (ENTRY, GPU: entry point and placement),
  `sglang` (SGL), `megatron` (MEG), `modes` (MODE: flags with no effect in the chosen mode), `batch`
  (BATCH: the batch arithmetic, computed by core.batch).

A new rule: a function decorated with `@rule(code, title, severity, source)` in its family's module, with a
docstring stating the rule, and a line in the table below. Checks run in registration order: the families
are imported below in that order (GPU002 reads the layout GPU001 stores, BATCH006 the batch BATCH001 stores).

Finding codes (stable; `slime-assistant check-args --list-rules` prints this table with sources):

    SCRIPT001 error    the input is not a readable script (binary, NUL bytes, too large)
    SCRIPT002 warning  the input is not valid UTF-8
    SCRIPT003 error    an unterminated quote, expansion or array: bash would refuse the script
    SCRIPT004 info     a value the checker cannot resolve statically ($(...), backticks, environment, loops)
    SCRIPT005 warning  no `python ... train.py` / `train_async.py` command found
    SCRIPT006 info     several train commands: the last one is checked
    SCRIPT007 info     a sourced file: model scripts are taken from the catalog, other files are unknown
    SCRIPT008 error    flags that begin a command of their own (a comment or stray space broke the `\\` chain)
    SCRIPT009 info     the train command sits inside an if, loop or function
    SCRIPT010 warning  a here-document that is never closed
    SCRIPT011 info     checks skipped because unresolved words could hide flags
    SCRIPT012 error    a sourced file that cannot exist (resolved from the script's folder) or a model with no script
    SCRIPT013 warning  a value or the script's expansions past the reader's size limits: left unresolved
    SCRIPT014 warning  a character bash reads as part of a word although it looks like a space (NBSP, lone CR...)
    ARG001    error    unknown flag: slime silently ignores it (with a did-you-mean)
    ARG002    warning  a flag given twice with different values (says which one wins)
    ARG003    warning  an abbreviation SGLang's parser silently expands
    ARG004    error    an abbreviation argparse finds ambiguous: it stops with an error
    ARG005    error    a flag that needs a value has none
    ARG006    error    a value argparse cannot convert to the flag's type
    ARG007    error    a value outside the flag's choices
    ARG008    warning  a word no parser reads (a value after a switch, or a stray word)
    ARG009    error    a required flag is missing
    ARG010    error    a flag only another launcher registers
    ARG011    error    an SGLang flag slime deliberately does not register (it sets the value itself)
    ARG012    warning  a deprecated flag
    ARG013    info     --custom-config-path: a YAML file may override any value checked here
    BATCH001  error    the batch equation fails (error when slime asserts, warning when samples are dropped)
    BATCH002  info     the equation holds with a different number of steps than given or assumed
    BATCH003  warning  no global batch: Megatron falls back to micro batch x data-parallel size
    BATCH004  error    a rollout is smaller than one global batch: no training step can run
    BATCH005  info     --num-rollout 0: nothing is trained
    BATCH006  error    static batching: a step's micro-batches do not split over data-parallel ranks (first step)
    BATCH007  error    the global batch is smaller than micro batch x data-parallel size (start-up)
    BATCH008  error    the global batch is not a multiple of micro batch x data-parallel size (start-up, dynamic or not)
    ENTRY001  error    train_async.py refuses --colocate
    ENTRY002  info     bare argument list without an entry: entry-specific checks skipped
    GPU001    error    a disaggregated run without --rollout-num-gpus
    GPU002    warning  rollout GPUs do not divide into whole engines (error when not even one engine fits)
    GPU003    error    the run needs more GPUs than the saved profile has (info when it uses fewer)
    GPU004    error    --num-gpus-per-node (default 8) differs from the GPUs per node (the profile's, or a multi-node actor's)
    MEG001    error    world size not divisible by TP x PP x CP
    MEG002    error    layers not divisible by the pipeline size
    MEG003    error    attention heads do not divide the hidden size (no --kv-channels)
    MEG004    error    --min-lr above --lr
    MEG005    error    --save without --save-interval
    MEG006    error    required model flags missing (--num-layers, --hidden-size, --num-attention-heads)
    MEG007    error    removed Megatron flags (--batch-size, --warmup, --model-parallel-size, --checkpoint-activations)
    MEG008    error    sequence length not a multiple of 2 x CP
    MEG009    error    --max-position-embeddings below the sequence length
    MEG010    error    expert parallelism without a divisible --num-experts
    MEG011    error    selective recompute with a recompute method
    MEG012    error    uneven pipeline layer counts with pipeline size 1
    MEG013    error    the expert grid EP x ETP x PP does not divide the training world size
    MODE001   info     --micro-batch-size under --use-dynamic-batch-size: packs nothing, still checked at start-up
    MODE002   warning  --max-tokens-per-gpu has no effect without --use-dynamic-batch-size
    MODE003   warning  --sequence-parallel has no effect with tensor parallel size 1
    MODE004   warning  --num-epoch is ignored when --num-rollout is given
    MODE005   warning  --kl-loss-coef has no effect without --use-kl-loss
    MODE006   info     --use-kl-loss with --kl-loss-coef 0: the reference model is loaded for nothing but logs
    MODE007   warning  eval data without --eval-interval: no evaluation runs
    MODE008   warning  offload flags ignored under --colocate --release-train
    MODE009   warning  an SFT run without --debug-train-only: SGLang engines started for a rollout that never generates
    MODE010   error    the SFT rollout with --apply-chat-template: prompts arrive as text, not messages
    SGL001    error    --rollout-num-gpus-per-engine not divisible by the SGLang pipeline size
    SGL002    error    --sglang-dp-size > 1 without --sglang-enable-dp-attention
    SGL003    error    mutually exclusive SGLang deployment options
    SLIME001  error    --rollout-temperature must be > 0
    SLIME002  error    KL needs --ref-load
    SLIME003  error    --kl-coef and --kl-loss-coef both non-zero
    SLIME004  error    on-policy distillation options inconsistent
    SLIME005  error    --eval-interval without eval data
    SLIME006  error    --save-interval without --save
    SLIME007  error    REINFORCE++ estimators need --normalize-advantages
    SLIME008  error    --use-rollout-logprobs with --use-tis
    SLIME009  error    --get-mismatch-metrics without --custom-tis-function-path
    SLIME010  error    --use-dynamic-batch-size without --max-tokens-per-gpu
    SLIME011  error    --balance-by-flops without --use-dynamic-batch-size
    SLIME012  error    debug train/rollout data paths equal
    SLIME013  error    --debug-rollout-only with --debug-train-only
    SLIME014  error    --over-sampling-batch-size below --rollout-batch-size
    SLIME015  error    neither --num-rollout nor --num-epoch (or --num-epoch without the global dataset)
    SLIME016  error    --enable-mtp-training without --mtp-num-layers
    SLIME017  error    prompt length leaves no room for a response in the context length
    SLIME018  error    --only-train-params-name-list with --freeze-params-name-list
    SLIME019  error    disk weight transport without --update-weight-disk-dir
    SLIME020  error    --release-train requirements
    SLIME021  error    delta weight updates requirements
    SLIME022  warning  --n-samples-per-prompt 1 with group-normalised rewards: every reward becomes 0
    SLIME023  warning  CISPO with --eps-clip below 1
    SLIME024  error    --hf-checkpoint missing: the actor and the SGLang engines load the model from it
    VER001    warning  your checkout builds with another SGLang or Megatron than the catalog's flags (info if no flag is in doubt)
    VER002    warning  a piece of your checkout's parser was not understood (says what that means for the check)
    VER003    info     checks skipped because your checkout does not have the slime code they judge
    VER004    info     --train-backend other than megatron: the MEG checks are skipped

With a user's slime checkout, a rule that ports one of slime's checks runs only when that check's code is in
the checkout (`requires=CodeDep(...)` on `@rule`, or the DEPENDS table of `versions`), and cites its line there.
"""

from core.launch.rules import reading, flags, slime, layout, sglang, megatron, modes, batch  # noqa: F401, I001
from core.launch.rules import versions  # noqa: F401, I001  (last: it reads the requirements of the rules above)
from core.launch.rules.context import CheckOptions, RuleContext, parse_words
from core.launch.rules.flags import flag_findings
from core.launch.rules.reading import note_findings, unresolved_findings
from core.launch.rules.registry import RULES, RuleInfo, finding, list_rules, rule, run_rules

__all__ = ["RULES", "CheckOptions", "RuleContext", "RuleInfo", "finding", "flag_findings", "list_rules",
           "note_findings", "parse_words", "rule", "run_rules", "unresolved_findings"]
