//! A trial's report as people read it: `report.md` (tables per cell and per arm, the paired differences, the
//! suspect gates) and `report.html`, one self-contained page (no script, no remote resource) with a chart of
//! works and cost per task, arms side by side, that a browser opens offline. Every text from a task, a gate or a
//! job is escaped.

use std::fmt::Write;

use super::job::Attempt;
use super::report::{ArmTotals, Cell, Pair, Report};

fn rate(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{:.0}%", v * 100.0))
}

fn dollars(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("${v:.3}"))
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{:.1} s", v / 1000.0))
}

/// A Markdown table cell: no line break, no pipe, no HTML.
fn md(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '|' => "\\|".to_owned(),
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '&' => "&amp;".to_owned(),
            c if c.is_control() => " ".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The rows of the per-cell table: task, arm, works/graded, failed, inconclusive, infra errors, median and p90
/// duration, median cost, dollars per working result, pass@1, pass^k at the largest k.
fn cell_row(cell: &Cell) -> [String; 11] {
    let [failed, inconclusive, infra] = cell.counts.other_verdicts();
    [
        cell.task.clone(),
        cell.arm.clone(),
        format!("{}/{} ({})", cell.counts.works, cell.counts.graded(), rate(cell.works_rate)),
        failed,
        inconclusive,
        infra,
        seconds(cell.duration_ms_median),
        seconds(cell.duration_ms_p90),
        dollars(cell.cost_usd_median),
        dollars(cell.dollars_per_working_result),
        format!("{} / {}", rate(cell.pass_at_k.first().copied()), rate(cell.pass_all_k.last().copied())),
    ]
}

const CELL_HEADER: [&str; 11] = [
    "Task",
    "Arm",
    "Works",
    "Failed",
    "Inconclusive",
    "Infra errors",
    "Median time",
    "p90 time",
    "Median cost",
    "$ per working result",
    "pass@1 / pass^n",
];

const ARM_HEADER: [&str; 8] =
    ["Arm", "Works", "Failed", "Inconclusive", "Infra errors", "Cost", "$ per working result", "Working results per $"];

fn arm_row(arm: &ArmTotals) -> [String; 8] {
    [
        arm.arm.clone(),
        format!("{}/{} ({})", arm.counts.works, arm.counts.graded(), rate(arm.works_rate)),
        arm.counts.failed.to_string(),
        arm.counts.inconclusive.to_string(),
        arm.counts.infra_errors.to_string(),
        dollars(arm.cost_usd),
        dollars(arm.dollars_per_working_result),
        arm.working_results_per_dollar.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}")),
    ]
}

const PAIR_HEADER: [&str; 4] = ["Task", "Arm", "Works rate difference", "Median cost difference"];

fn pair_row(pair: &Pair) -> [String; 4] {
    [
        pair.task.clone(),
        format!("{} vs {}", pair.arm, pair.baseline),
        pair.works_rate_difference.map_or_else(|| "–".to_owned(), |v| format!("{:+.0} points", v * 100.0)),
        pair.cost_usd_median_difference.map_or_else(|| "–".to_owned(), |v| format!("{v:+.3} $")),
    ]
}

const ATTEMPT_HEADER: [&str; 9] = ["Task", "Arm", "Rep", "Verdict", "Gates failed", "Why", "Cost", "Time", "Outcome"];

/// An attempt with its evidence (the run and its log are linked apart): its verdict (or where it is), the gates
/// that did not pass, why, cost, time, outcome.
fn attempt_row(attempt: &Attempt) -> [String; 9] {
    let failing: Vec<&str> = attempt.gates.iter().filter(|g| g.exit_code != Some(0)).map(|g| g.id.as_str()).collect();
    [
        attempt.key.task.clone(),
        attempt.key.arm.clone(),
        attempt.key.rep.to_string(),
        attempt.verdict.map_or_else(|| format!("{:?}", attempt.state).to_lowercase(), |v| v.as_str().to_owned()),
        if failing.is_empty() { "–".to_owned() } else { failing.join(", ") },
        attempt.reason.clone().unwrap_or_else(|| "–".to_owned()),
        dollars(attempt.cost_usd),
        seconds(attempt.duration_ms.map(|ms| ms as f64)),
        attempt.outcome_id.clone().unwrap_or_else(|| "–".to_owned()),
    ]
}

/// Where a run's event log is from a report written in its job's directory (`trials/<job>/`).
fn log_link(run_id: &str) -> String {
    format!("../../runs/{run_id}/events.ndjson")
}

/// A Markdown table of `header` and `rows`.
fn md_table<const N: usize>(out: &mut String, header: [&str; N], rows: impl Iterator<Item = [String; N]>) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(N));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|v| md(v)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
}

/// An HTML table of `header` and `rows`, every cell escaped.
fn html_table<const N: usize>(out: &mut String, header: [&str; N], rows: impl Iterator<Item = [String; N]>) {
    out.push_str("<table><tr>");
    for name in header {
        let _ = write!(out, "<th>{}</th>", html(name));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for value in row {
            let _ = write!(out, "<td>{}</td>", html(&value));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

/// `report.md`.
pub fn markdown(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Trial of {}\n", md(&report.workbench));
    let _ = writeln!(out, "Jobs: {}. Arms: {}.\n", md(&report.jobs.join(", ")), md(&report.arms.join(", ")));
    out.push_str("## Arms\n\n");
    md_table(&mut out, ARM_HEADER, report.arm_totals.iter().map(arm_row));
    out.push_str("\n## Tasks\n\n");
    md_table(&mut out, CELL_HEADER, report.cells.iter().map(cell_row));
    if !report.pairs.is_empty() {
        out.push_str("\n## Against the first arm\n\n");
        md_table(&mut out, PAIR_HEADER, report.pairs.iter().map(pair_row));
    }
    if !report.suspect_gates.is_empty() {
        let _ = writeln!(
            out,
            "\n## Suspect gates\n\nNo attempt passed these, in any arm: check the gate before the package.\n"
        );
        for gate in &report.suspect_gates {
            let _ = writeln!(out, "- {} · {} ({} attempts)", md(&gate.task), md(&gate.gate), gate.attempts);
        }
    }
    out.push_str("\n## Attempts\n\nEach run's event log is `runs/<run>/events.ndjson` under the Workbench home.\n\n");
    let header = [ATTEMPT_HEADER.as_slice(), &["Run"]].concat();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for attempt in &report.attempts {
        let mut cells: Vec<String> = attempt_row(attempt).iter().map(|v| md(v)).collect();
        cells.push(attempt.run_id.as_deref().map_or_else(|| "–".to_owned(), md));
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

/// The width of one arm's entry in the chart's legend.
const LEGEND_ENTRY: f64 = 120.0;

/// The palette of the arms, in order (colour-blind safe).
const COLOURS: [&str; 4] = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"];

/// The chart: per task, one bar per arm for its works rate (left scale), and a dot per arm for its median cost
/// (right scale).
fn chart(report: &Report) -> String {
    let (bar, gap, height, top, left) = (22.0, 26.0, 200.0, 20.0, 48.0);
    let group = bar * report.arms.len().max(1) as f64 + gap;
    // The plot's right edge; the picture is wide enough for the legend too (one arm per 120 px).
    let right = left + group * report.tasks.len().max(1) as f64;
    let width = (right + left).max(left + LEGEND_ENTRY * report.arms.len() as f64);
    let max_cost = report.cells.iter().filter_map(|c| c.cost_usd_median).fold(0.0_f64, f64::max);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{:.0}\" role=\"img\" aria-label=\"Works and median cost per task\">",
        height + top + 60.0
    );
    let _ = write!(
        svg,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{:.0}\" y2=\"{}\" stroke=\"#999\"/>",
        top + height,
        right,
        top + height
    );
    for tick in [0.0, 0.5, 1.0] {
        let y = top + height * (1.0 - tick);
        let _ = write!(
            svg,
            "<text x=\"{:.0}\" y=\"{y:.0}\" font-size=\"11\" text-anchor=\"end\">{:.0}%</text>",
            left - 6.0,
            tick * 100.0
        );
        if max_cost > 0.0 {
            let _ = write!(
                svg,
                "<text x=\"{:.0}\" y=\"{y:.0}\" font-size=\"11\">${:.2}</text>",
                right + 6.0,
                max_cost * tick
            );
        }
    }
    for (t, task) in report.tasks.iter().enumerate() {
        let x0 = left + gap / 2.0 + group * t as f64;
        for (a, arm) in report.arms.iter().enumerate() {
            let Some(cell) = report.cells.iter().find(|c| &c.task == task && &c.arm == arm) else { continue };
            let colour = COLOURS[a % COLOURS.len()];
            let x = x0 + bar * a as f64;
            let works = cell.works_rate.unwrap_or(0.0);
            let h = height * works;
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"{colour}\"><title>{} · {}: {}</title></rect>",
                top + height - h,
                bar - 3.0,
                html(task),
                html(arm),
                rate(cell.works_rate)
            );
            if let Some(cost) = cell.cost_usd_median.filter(|_| max_cost > 0.0) {
                let y = top + height * (1.0 - cost / max_cost);
                let _ = write!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\"><title>{} · {}: median {}</title></circle>",
                    x + (bar - 3.0) / 2.0,
                    html(task),
                    html(arm),
                    dollars(Some(cost))
                );
            }
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
            x0 + bar * report.arms.len() as f64 / 2.0,
            top + height + 18.0,
            html(task)
        );
    }
    for (a, arm) in report.arms.iter().enumerate() {
        let x = left + LEGEND_ENTRY * a as f64;
        let y = top + height + 42.0;
        let _ = write!(
            svg,
            "<rect x=\"{x:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{:.0}\" y=\"{y:.0}\" font-size=\"12\">{}</text>",
            y - 10.0,
            COLOURS[a % COLOURS.len()],
            x + 16.0,
            html(arm)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// `report.html`: the same tables and the chart, styled inline, nothing fetched.
pub fn html_page(report: &Report) -> String {
    let mut out = String::new();
    let title = format!("Trial of {}", html(&report.workbench));
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <style>body{{font-family:system-ui,sans-serif;margin:2rem;color:#222}}table{{border-collapse:collapse;margin:1rem 0;display:block;overflow-x:auto;max-width:100%}}\
         th,td{{border:1px solid #ccc;padding:.3rem .6rem;text-align:left}}th{{background:#f3f3f3}}</style></head><body>\
         <h1>{title}</h1><p>Jobs: {}. Arms: {}. Bars: works rate; dots: median cost.</p>{}",
        html(&report.jobs.join(", ")),
        html(&report.arms.join(", ")),
        chart(report)
    );
    out.push_str("<h2>Arms</h2>");
    html_table(&mut out, ARM_HEADER, report.arm_totals.iter().map(arm_row));
    out.push_str("<h2>Tasks</h2>");
    html_table(&mut out, CELL_HEADER, report.cells.iter().map(cell_row));
    if !report.pairs.is_empty() {
        out.push_str("<h2>Against the first arm</h2>");
        html_table(&mut out, PAIR_HEADER, report.pairs.iter().map(pair_row));
    }
    if !report.suspect_gates.is_empty() {
        out.push_str("<h2>Suspect gates</h2><ul>");
        for gate in &report.suspect_gates {
            let _ = write!(out, "<li>{} · {} ({} attempts)</li>", html(&gate.task), html(&gate.gate), gate.attempts);
        }
        out.push_str("</ul>");
    }
    out.push_str("<h2>Attempts</h2><table><tr>");
    for name in ATTEMPT_HEADER.iter().chain(&["Run", "Gate logs"]) {
        let _ = write!(out, "<th>{}</th>", html(name));
    }
    out.push_str("</tr>");
    for attempt in &report.attempts {
        out.push_str("<tr>");
        for value in attempt_row(attempt) {
            let _ = write!(out, "<td>{}</td>", html(&value));
        }
        match &attempt.run_id {
            Some(run) => {
                let _ = write!(out, "<td><a href=\"{}\">{}</a></td>", html(&log_link(run)), html(run));
            }
            None => out.push_str("<td>–</td>"),
        }
        out.push_str("<td>");
        for gate in attempt.gates.iter().filter(|g| g.exit_code != Some(0)) {
            let _ = write!(
                out,
                "<details><summary>{} ({})</summary><pre>{}</pre></details>",
                html(&gate.id),
                gate.exit_code.map_or_else(|| "no exit".to_owned(), |code| format!("exit {code}")),
                html(&gate.log)
            );
        }
        out.push_str("</td></tr>");
    }
    out.push_str("</table></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trials::job::{Attempt, AttemptKey, AttemptState, Job, Verdict};

    fn sample(task: &str) -> Report {
        let mut job = Job::new(
            "wbt_0a".into(),
            "/p".into(),
            "p<x>".into(),
            &[],
            &["workbench".into(), "plain".into()],
            1,
            "local".into(),
        );
        for (arm, verdict) in [("workbench", Verdict::Works), ("plain", Verdict::Failed)] {
            let mut attempt = Attempt::pending(AttemptKey { task: task.into(), arm: arm.into(), rep: 1 });
            attempt.state = AttemptState::Done;
            attempt.verdict = Some(verdict);
            attempt.cost_usd = Some(0.25);
            job.attempts.push(attempt);
        }
        crate::trials::report::report(&[job])
    }

    #[test]
    fn the_markdown_has_a_row_per_cell_and_escapes_names() {
        let text = markdown(&sample("fix|<b>"));
        assert!(text.contains("# Trial of p&lt;x&gt;"), "{text}");
        assert!(text.contains("| fix\\|&lt;b&gt; | workbench | 1/1 (100%) |"), "{text}");
        assert!(text.contains("| fix\\|&lt;b&gt; | plain vs workbench | -100 points | +0.000 $ |"), "{text}");
    }

    #[test]
    fn the_page_is_self_contained_and_escaped() {
        let page = html_page(&sample("<script>alert(1)</script>"));
        assert!(!page.contains("<script>"), "a task name became markup");
        assert!(page.contains("&lt;script&gt;"));
        assert!(page.contains("<svg") && page.contains("<rect"));
        assert!(!page.contains("http://") || page.contains("xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(!page.contains("src="), "nothing is fetched");
    }

    #[test]
    fn the_chart_is_wide_enough_for_its_legend() {
        // One task and two arms: the plot is narrow, the legend's second entry must still be inside the picture.
        let svg = chart(&sample("fix"));
        let width: f64 = svg
            .split("width=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|w| w.parse().ok())
            .unwrap_or(0.0);
        assert!(width >= 48.0 + LEGEND_ENTRY * 2.0, "{width}: {svg}");
    }
}
