"""Rules that know which version they judge (VER0xx), and the gate that runs them against a user's checkout.

A rule that ports one of slime's own checks states the code it depends on (`CodeDep`: a file of slime's tree
and a pattern of the check's line), either with `@rule(..., requires=CodeDep(...))` or in DEPENDS below. When
the report is checked against a user's checkout, `CodeGate` looks for that code in *their* tree: found, the
rule runs and its findings cite their line (`path:line@commit`); not found (the check was added later, or
removed), the rule is skipped and one VER003 note names it. Detection is by the code, never by dates.

The versions the catalog was read from are compared with what the checkout says it runs (its docker files):
when SGLang or Megatron differ, a flag of that layer is not called unknown with certainty (VER001).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from core.findings import Finding, Severity
from core.launch.rules.registry import ERR, INFO, REQUIREMENTS, RULES, WARN, CodeDep, finding, register
from core.paths import PathRefused, containing_roots, decode_text, read_within
from core.pins import SLIME_SHORT, slime_source

MAX_CODE_BYTES = 4_000_000  # one file of the user's tree read for the gate

# Limits of what the checker knows about the user's versions: no upstream line to cite.
register("VER001", "")
register("VER002", "")
register("VER003", "")
register("VER004", "")

_ARGS = "slime/utils/arguments.py"
_SGL = "slime/backends/sglang_utils/arguments.py"

DEPENDS: dict[str, CodeDep] = {
    "ARG009": CodeDep(_ARGS, r"[\"']--rollout-batch-size[\"'],[^)]{0,300}?required=True",
                      "--rollout-batch-size declared required", span=8),
    "ARG013": CodeDep(_ARGS, r"args\.custom_config_path", "--custom-config-path loading a YAML file"),
    "SLIME001": CodeDep(_ARGS, r"args\.rollout_temperature\s*<=?\s*0", "the rollout temperature check"),
    "SLIME002": CodeDep(_ARGS, r"os\.path\.exists\(args\.ref_load\)", "the --ref-load check for KL"),
    "SLIME003": CodeDep(_ARGS, r"args\.kl_coef\s*!=\s*0\s+and\s+args\.kl_loss_coef\s*!=\s*0",
                        "kl_coef and kl_loss_coef exclusive"),
    "SLIME004": CodeDep(_ARGS, r"if args\.use_opd\b", "the on-policy distillation checks"),
    "SLIME005": CodeDep(_ARGS, r"assert args\.eval_datasets|eval_interval is set", "eval data needed with "
                        "--eval-interval"),
    "SLIME006": CodeDep(_ARGS, r"assert args\.save is not None", "--save needed with --save-interval"),
    "SLIME007": CodeDep(_ARGS, r"assert args\.normalize_advantages", "REINFORCE++ needs normalised advantages"),
    "SLIME008": CodeDep(_ARGS, r"assert not args\.use_tis", "--use-rollout-logprobs excludes --use-tis"),
    "SLIME009": CodeDep(_ARGS, r"args\.custom_tis_function_path is not None", "mismatch metrics need a TIS function"),
    "SLIME010": CodeDep(_ARGS, r"assert args\.max_tokens_per_gpu is not None", "dynamic batching needs "
                        "--max-tokens-per-gpu"),
    "SLIME011": CodeDep(_ARGS, r"--balance-by-flops requires", "--balance-by-flops needs dynamic batching"),
    "SLIME012": CodeDep(_ARGS, r"must not be equal to --save-debug-rollout-data", "debug data paths differ"),
    "SLIME013": CodeDep(_ARGS, r"debug_rollout_only and debug_train_only cannot be set", "debug modes exclusive"),
    "SLIME014": CodeDep(_ARGS, r"args\.over_sampling_batch_size\s*>=\s*args\.rollout_batch_size",
                        "over-sampling batch not below the rollout batch"),
    "SLIME015": CodeDep(_ARGS, r"assert args\.num_rollout is not None", "--num-rollout or --num-epoch needed"),
    "SLIME016": CodeDep(_ARGS, r"assert args\.mtp_num_layers", "MTP training needs --mtp-num-layers"),
    "SLIME017": CodeDep(_ARGS, r"args\.rollout_max_prompt_len\s*<=\s*args\.rollout_max_context_len",
                        "prompt length within the context length"),
    "SLIME018": CodeDep(_ARGS, r"--only-train-params-name-list, or --freeze-params-name-list",
                        "train-only and freeze lists exclusive"),
    "SLIME019": CodeDep(_ARGS, r"update_weight_transport\s*==\s*[\"']disk[\"']", "disk weight transport needs a dir"),
    "SLIME020": CodeDep(_ARGS, r"--release-train is only supported", "--release-train requirements"),
    "SLIME021": CodeDep(_ARGS, r"args\.update_weight_mode\s*==\s*[\"']delta[\"']", "delta weight updates"),
    "SLIME023": CodeDep(_ARGS, r"CISPO is canonically single-sided", "the CISPO clip warning"),
    "SLIME024": CodeDep(_ARGS, r"[\"']--hf-checkpoint[\"']", "the --hf-checkpoint flag"),
    "MODE004": CodeDep(_ARGS, r"num_epoch will be ignored", "--num-epoch ignored with --num-rollout"),
    "MODE008": CodeDep(_ARGS, r"Ignoring --offload-train because --release-train", "offload ignored under "
                       "--release-train"),
    "BATCH001": CodeDep(_ARGS, r"assert args\.global_batch_size == global_batch_size", "the batch equation"),
    "SGL001": CodeDep(_SGL, r"args\.sglang_pp_size > 1", "the SGLang pipeline size check"),
    "SGL002": CodeDep(_SGL, r"assert args\.sglang_enable_dp_attention", "--sglang-dp-size needs DP attention"),
    "SGL003": CodeDep(_SGL, r"rollout_external", "exclusive SGLang deployment options"),
    "BATCH006": CodeDep("slime/utils/dp_schedule.py", r"is not a multiple of", "the static micro-batch split check"),
    "MEG012": CodeDep("slime/backends/megatron_utils/arguments.py", r"decoder_first_pipeline_num_layers is None",
                      "uneven pipeline layers with pipeline size 1"),
}
for _code, _dep in DEPENDS.items():
    if _code in RULES:
        REQUIREMENTS.setdefault(_code, _dep)


def _pin(line: int, path: str = _ARGS) -> str:
    return slime_source(path, line)


# A rule with several checks cites each one's line; each is judged by its own code. Keyed by the citation a
# finding carries at the pin (the rule's `source=`), so a check that is not in the user's tree is skipped.
SUBCHECKS: dict[str, CodeDep] = {
    _pin(1787): CodeDep(_ARGS, r"if args\.opd_type is None", "OPD needs --opd-type"),
    _pin(1791): CodeDep(_ARGS, r"if args\.opd_teacher_load is None", "megatron OPD needs a teacher"),
    _pin(1807): CodeDep(_ARGS, r"opd_teacher_load is not None", "sglang OPD takes no teacher checkpoint"),
    _pin(1814): CodeDep(_ARGS, r"opd_teacher_load is not None", "a teacher checkpoint needs OPD"),
    _pin(1997): CodeDep(_ARGS, r"assert args\.rollout_global_dataset", "--num-epoch needs the global dataset"),
    _pin(2050): CodeDep(_ARGS, r"--release-train does not support critic", "--release-train without a critic"),
    _pin(2052): CodeDep(_ARGS, r"--release-train does not support --keep-old-actor", "--release-train without "
                        "--keep-old-actor"),
    _pin(2054): CodeDep(_ARGS, r"--release-train requires --save", "--release-train needs --save"),
    _pin(2058): CodeDep(_ARGS, r"--release-train requires --update-weight-mode=full", "--release-train needs full "
                        "disk updates"),
    _pin(2060): CodeDep(_ARGS, r"update_weight_mode\s*==\s*[\"']delta[\"']:\s*\n\s*if args\.update_weight_transport "
                        r"!= [\"']disk[\"']", "delta updates need disk transport", span=3),
    _pin(2065): CodeDep(_ARGS, r"update_weight_mode\s*==\s*[\"']delta[\"'][^\n]*\n(?:[^\n]*\n){0,12}?\s*if "
                        r"args\.colocate", "delta updates refuse --colocate", span=14),
    _pin(2071): CodeDep(_ARGS, r"if not args\.update_weight_local_checkpoint_dir", "delta updates need a local "
                        "checkpoint dir"),
    _pin(1944): CodeDep(_ARGS, r"if args\.offload_rollout is False", "--no-offload-rollout under --release-train"),
}


class CodeGate:
    """Finds the code each rule depends on in the user's checkout (files read once, bounded, inside the tree)."""

    def __init__(self, checkout: Path, commit: str | None) -> None:
        from core.launch.catalog_build.build import Layout, package_of

        self.checkout = Path(checkout)
        self.layout = Layout(package_of(self.checkout))  # a fork may rename slime/ (miles/)
        self.commit = commit or "checkout"
        self.roots = containing_roots(self.checkout)
        self._text: dict[str, str | None] = {}
        self.skipped: list[tuple[str, CodeDep]] = []  # whole rules whose code is not in the tree
        self.dropped: list[tuple[str, CodeDep]] = []  # findings of one check (among a rule's several) not in the tree

    def text(self, rel: str) -> str | None:
        rel = self.layout.cite(rel) if rel.startswith("slime/") else rel
        if rel not in self._text:
            try:
                data = read_within(self.checkout / rel, self.roots, limit=MAX_CODE_BYTES)
                self._text[rel] = decode_text(data) if len(data) <= MAX_CODE_BYTES else None
            except (OSError, PathRefused, ValueError):
                self._text[rel] = None
        return self._text[rel]

    def line_of(self, dep: CodeDep) -> int | None:
        """The line (1-based) of the first match of the dependency in the user's file, or None."""
        text = self.text(dep.path)
        if text is None:
            return None
        m = re.search(dep.pattern, text, re.S if dep.span > 1 else 0)
        return text.count("\n", 0, m.start()) + 1 if m else None

    def locate(self, code: str) -> tuple[bool, str | None]:
        """Whether the rule runs here, and the citation of the code it judges in the user's tree."""
        dep = REQUIREMENTS.get(code)
        if dep is None:
            return True, None
        line = self.line_of(dep)
        if line is None:
            self.skipped.append((code, dep))
            return False, None
        return True, f"{self.layout.cite(dep.path)}:{line}@{self.commit}"


    def subcheck(self, f: Finding) -> Finding | None:
        """A finding of one check among several in a rule: cited at that check's line in the user's tree, or
        dropped (and noted) when their tree does not have that check."""
        dep = SUBCHECKS.get(f.source or "")
        if dep is None:
            return f
        line = self.line_of(dep)
        if line is None:
            if (f.code, dep) not in self.dropped:
                self.dropped.append((f.code, dep))
            return None
        return f.model_copy(update={"source": f"{self.layout.cite(dep.path)}:{line}@{self.commit}"})

    def recite(self, f: Finding) -> Finding:
        """A finding that cites our pin's slime file cites the user's file instead (their commit, no line: the
        lines moved), when their tree has that file."""
        m = _PIN_CITATION.match(f.source or "")
        if m is None or self.text(m.group(1)) is None:
            return f
        return f.model_copy(update={"source": f"{self.layout.cite(m.group(1))}@{self.commit}"})


_PIN_CITATION = re.compile(rf"^(slime/[A-Za-z0-9_./\-]+\.py)(?::\d+(?:-\d+)?)?@{SLIME_SHORT}$")


def gate_for(options: Any, catalog: Any) -> CodeGate | None:
    """The gate for a check against a user's checkout (a directory), else None (the bundled pin: all rules run)."""
    path = getattr(options, "catalog_path", None)
    if path is None or not Path(path).is_dir() or catalog is None or not getattr(catalog, "versions", None):
        return None
    slime = catalog.version_of("slime")
    known = slime is not None and all(c in "0123456789abcdef" for c in slime.version)
    return CodeGate(Path(path), slime.version if known else None)


_HOW = {"sglang": "--sglang-source DIR (or SLIME_ASSISTANT_SGLANG_SOURCE, or the profile's SGLang source)",
        "megatron": "--megatron-source DIR (or SLIME_ASSISTANT_MEGATRON_SOURCE, or the profile's Megatron source)"}
_NAME = {"sglang": "SGLang", "megatron": "Megatron"}


def version_findings(ctx: Any, findings: list[Finding], gate: CodeGate | None) -> list[Finding]:
    """Soften what a differing SGLang or Megatron makes uncertain, and add the VER notes."""
    catalog = ctx.catalog
    if catalog is None:
        return findings
    differs = {v.layer: v for v in getattr(catalog, "versions", []) if v.layer in _NAME and v.differs}
    out: list[Finding] = []
    softened: dict[str, list[str]] = {}
    for f in findings:
        layer = _layer_in_doubt(f, ctx, differs)
        if layer is not None:
            v = differs[layer]
            runs = f"runs {v.runs}" if not v.runs.startswith("a ") else "may run another version"
            f = f.model_copy(update={"severity": WARN, "message": (
                f"{f.message} Not certain: the catalog has {_NAME[layer]} {v.version} ({v.origin}), but your "
                f"environment {runs} ({v.runs_origin}).")})
            softened.setdefault(layer, []).append(f.flag or "")
        out.append(f)
    for layer, v in differs.items():
        flags = softened.get(layer, [])
        shown = ", ".join(sorted(set(flags))[:6])
        said = (f"Your checkout does not say which {_NAME[layer]} it builds with ({v.runs_origin})"
                if v.runs.startswith("a ") else f"Your checkout builds with {_NAME[layer]} {v.runs} ({v.runs_origin})")
        out.append(finding("VER001", f"{said}, but the {_NAME[layer]} flags were read from {v.version} ({v.origin})"
                           + (f"; {len(flags)} finding(s) about {shown} are warnings, not errors." if flags else
                              "; flags of that layer may differ."),
                           severity=WARN if flags else INFO, fix=f"point the checker at the real one with {_HOW[layer]}"))
    if gate is not None:
        out = [r for r in (gate.subcheck(f) for f in out) if r is not None]
        out = [gate.recite(f) for f in out]
    for piece in catalog.not_understood() if hasattr(catalog, "not_understood") else []:
        out.append(finding("VER002", f"{piece.name}: not understood in your checkout ({piece.detail}); "
                           f"{piece.effect or 'its flags may be judged against the bundled catalog'}.",
                           fix="tell us the slime commit; meanwhile, read the findings about those flags with care"))
    if gate is not None and (gate.skipped or gate.dropped):
        parts = []
        if gate.dropped:
            shown = "; ".join(f"{code} ({dep.what})" for code, dep in gate.dropped)
            parts.append(f"not reported, because your checkout does not make these checks: {shown}")
        if gate.skipped:
            shown = "; ".join(f"{code} ({dep.what}: not in {gate.layout.cite(dep.path)})" for code, dep in gate.skipped[:12])
            more = f" and {len(gate.skipped) - 12} more" if len(gate.skipped) > 12 else ""
            parts.append(f"{len(gate.skipped)} check(s) skipped because your checkout does not have the code they "
                         f"judge: {shown}{more}")
        out.append(finding("VER003", ". ".join(p[0].upper() + p[1:] for p in parts) + ".", severity=INFO))
    return out


def _layer_in_doubt(f: Finding, ctx: Any, differs: dict[str, Any]) -> str | None:
    """The differing layer a finding depends on (an unknown flag, a choice or type of that layer's flag)."""
    if f.severity != Severity.ERROR or f.flag is None or f.code not in {"ARG001", "ARG004", "ARG006", "ARG007"}:
        return None
    spec = ctx.spec(f.flag)
    if spec is not None:
        owner = "sglang" if spec.owner in {"sglang", "router"} else spec.owner
        return owner if owner in differs and f.code != "ARG001" else None
    if f.flag.startswith(("--sglang-", "--router-")):
        return "sglang" if "sglang" in differs else None
    if "megatron" not in differs or _slime_typo(ctx, f.flag):
        return None
    return "megatron"


def _slime_typo(ctx: Any, flag: str) -> bool:
    """Whether an unknown flag is a near miss of one of slime's own flags (read from the user's checkout, so
    certain): `--n-sample-per-prompt` for `--n-samples-per-prompt` stays an error whatever Megatron runs."""
    guesses = ctx.catalog.suggest(flag, 1) if hasattr(ctx.catalog, "suggest") else []
    if not guesses:
        return False
    spec = ctx.catalog.lookup(guesses[0])
    return spec is not None and spec.owner == "slime" and difflib.SequenceMatcher(None, flag, guesses[0]).ratio() >= 0.85


__all__ = ["DEPENDS", "ERR", "CodeGate", "gate_for", "version_findings"]
