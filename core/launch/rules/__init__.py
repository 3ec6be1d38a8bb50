"""The launch checker's rules, one module per family, and the registry that runs them.

- `registry`: the `@rule` decorator, RULES (code -> title, severity, source, card, check) and the runner;
- `context`: the argument words split into flags and values, and the typed facts a rule reads (RuleContext);
- families: `reading` (SCRIPT: what the bash reader noticed), `flags` (ARG: unknown, repeated, mistyped
  flags), `slime` (SLIME: slime's own start-up checks), `layout` (ENTRY, GPU: entry point and placement),
  `sglang` (SGL), `megatron` (MEG), `modes` (MODE: flags with no effect in the chosen mode), `batch`
  (BATCH: the batch arithmetic, computed by core.batch).

The finding codes, with their titles and default severities, are defined once, in `codes` (CODES); the
registry and `slime-assistant check-args --list-rules` read them from there.

A new rule: a line in `codes`, and a function decorated with `@rule(code, source)` in its family's module,
with a docstring stating the rule. A rule reads only the script (through the RuleContext) and the shared
derivations (`derivations`: the batch arithmetic, the GPU layout, ... computed once per check and cached on
the context), never what another rule found or stored: skipping one rule (a version gate, a Skip, a
backend that does not apply) leaves every other rule's findings as they are. Checks run in registration
order (the families are imported below in that order), which fixes only the order of the skip notes.

With a user's slime checkout, a rule that ports one of slime's checks runs only when that check's code is in
the checkout (`requires=CodeDep(...)` on `@rule`, or the DEPENDS table of `versions`), and cites its line there.
"""

from core.launch.rules import reading, flags, slime, layout, sglang, megatron, modes, batch  # noqa: F401, I001
from core.launch.rules import versions  # noqa: F401, I001  (last: it reads the requirements of the rules above)
from core.launch.rules.context import CheckOptions, RuleContext, parse_words
from core.launch.rules.flags import flag_findings
from core.launch.rules.reading import note_findings, unresolved_findings
from core.launch.rules.codes import CODES
from core.launch.rules.registry import RULES, RuleInfo, finding, list_rules, rule, run_rules

if set(CODES) != set(RULES):  # every code of the table is registered by a family module, and no other
    raise RuntimeError(f"codes and registered rules differ: {sorted(set(CODES) ^ set(RULES))}")

__all__ = ["CODES", "RULES", "CheckOptions", "RuleContext", "RuleInfo", "finding", "flag_findings", "list_rules",
           "note_findings", "parse_words", "rule", "run_rules", "unresolved_findings"]
