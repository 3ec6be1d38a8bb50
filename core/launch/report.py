"""What a launch check says, for people and for programs: the typed summary of a check (`ReportSummary`), the
text reporter and the JSON reporter, and the table of finding codes. The command line (`check-args`) and the
Check-my-launch page both use these, so the page's download is the CLI's `--format json`, byte for byte."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from core.findings import Finding, count_by_severity, findings_json, render_text

if TYPE_CHECKING:
    from core.launch.check import CheckReport

JSON_FIELDS = ("code", "severity", "message", "line", "flag", "fix", "source")


class ReportSummary(BaseModel):
    """The numbers of one check. The counts and `flags`, `entry`, `batch`, `gpu_layout`, `complete` are always
    there; the rest only once a train command (or argument list) was read, and `train_commands` only for a
    script. The nested values are JSON payloads: `batch` is core.batch's BatchPlan as JSON, `gpu_layout` the
    layout rule's placement, `versions` one entry per layer checked against, `pieces` how a checkout's parser
    was read. Fields not given stay out of the JSON reporter's output."""

    model_config = ConfigDict(frozen=True)

    error: int = 0
    warning: int = 0
    info: int = 0
    flags: int = 0
    distinct_flags: int | None = None
    by_owner: dict[str, int] = {}
    unknown_flags: list[str] = []
    complete: bool = False
    entry: str | None = None
    batch: dict[str, Any] | None = None
    gpu_layout: dict[str, Any] | None = None
    catalog: dict[str, str] | None = None
    versions: list[dict[str, Any]] = []
    pieces: list[dict[str, Any]] = []
    unresolved: list[str] = []
    train_commands: int | None = None

    def recounted(self, findings: list[Finding]) -> ReportSummary:
        """The same summary with its severity counts taken from `findings`."""
        return self.model_copy(update=count_by_severity(findings))

    def as_json(self) -> dict[str, Any]:
        """The summary as the JSON reporter writes it: only the fields that were given, in the order of earlier
        releases (a check that found no train command lists `complete` after `gpu_layout`)."""
        doc = self.model_dump(mode="json", exclude_unset=True)
        if "distinct_flags" not in doc and "complete" in doc:
            complete = doc.pop("complete")
            doc = {**{k: v for k, v in doc.items() if k != "train_commands"}, "complete": complete,
                   **({"train_commands": doc["train_commands"]} if "train_commands" in doc else {})}
        return doc


def report_json(report: CheckReport) -> dict:
    """The JSON reporter: findings (fixed fields), categories (flag -> owner) and the summary."""
    return {"findings": findings_json(report.findings, JSON_FIELDS), "categories": report.categories,
            "versions": report.summary.versions, "summary": report.summary.as_json()}


def render_report_text(report: CheckReport) -> str:
    """The text reporter: findings, then the flag categories and the batch arithmetic in one line each."""
    from core.launch.versions import versions_line

    lines = [render_text(report.findings)] if report.findings else []
    s = report.summary
    owners = ", ".join(f"{k} {v}" for k, v in sorted(s.by_owner.items()))
    lines.append(f"\n{s.flags} flag(s) checked ({owners or 'none'}); entry: {report.entry or 'unknown'}")
    batch = s.batch
    if batch:
        gbs = batch.get("effective_global_batch_size")
        lines.append(f"batch: {batch['rollout_batch_size']} prompts x {batch['n_samples_per_prompt']} samples = "
                     f"{batch['samples_per_rollout']} per rollout; global batch {gbs}; "
                     f"{batch.get('steps_per_rollout')} step(s) per rollout")
    layout = s.gpu_layout
    if layout and layout.get("total") is not None:
        lines.append(f"GPUs: {layout['total']} ({layout['mode']})")
    versions = versions_line(s.versions)
    if versions:
        lines.append(versions)
    lines.append(f"{s.error} error(s), {s.warning} warning(s), {s.info} note(s)")
    return "\n".join(lines)


def rules_json() -> list[dict]:
    """Every finding code as JSON: code, default severity, title, upstream source (null for the checker's own
    limits) and the knowledge card that explains it (or null)."""
    from core.launch.rules import list_rules

    return [{"code": r.code, "severity": r.severity.value, "title": r.title, "source": r.source or None,
             "card": r.card} for r in list_rules()]


def render_rules() -> str:
    """Every finding code with its default severity, title and upstream source."""
    from core.launch.rules import list_rules

    rows = [f"{r.code:9} {r.severity.value:7} {r.title}\n{'':18}{r.source or '(a limit of the checker itself)'}"
            for r in list_rules()]
    return "\n".join(rows)
