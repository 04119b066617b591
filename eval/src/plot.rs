//! One SVG a person can open instead of reading tables: Hits@1 (next to how often
//! retrieval found a gold answer) per dataset and hop count, the latency distribution as
//! a CDF, and for a single run a latency histogram. Written by hand: no plotting
//! dependency, and the file opens in any browser.

use std::fmt::Write as _;

use super::{calibration::Calibration, metrics::Aggregate, report::Report};

const WIDTH: f64 = 960.0;
const MARGIN_LEFT: f64 = 90.0;
const MARGIN_RIGHT: f64 = 30.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

struct Bar {
    label: String,
    hits_at_1: f64,
    context_hit: f64,
    questions: usize,
}

/// The bars of one report: overall, then per hop count (or per question type) when the
/// run has more than one. Labels carry the run's name only when several runs share the
/// plot (one run's name is in the title).
fn bars_of(report: &Report, with_name: bool) -> Vec<Bar> {
    let bar = |group: Option<&str>, aggregate: &Aggregate| {
        let label = match (with_name, group) {
            (true, Some(group)) => format!("{} · {group}", report.name),
            (true, None) => report.name.clone(),
            (false, Some(group)) => group.to_owned(),
            (false, None) => "all".to_owned(),
        };
        Bar {
            label,
            hits_at_1: aggregate.hits_at_1,
            context_hit: aggregate.context_hit,
            questions: aggregate.questions,
        }
    };
    let groups = if report.breakdown.by_hops.len() > 1 {
        &report.breakdown.by_hops
    } else {
        &report.breakdown.by_type
    };
    let mut bars = vec![bar(None, &report.aggregate)];
    if groups.len() > 1 {
        if with_name {
            bars[0].label = format!("{} · all", report.name);
        }
        for (group, aggregate) in groups {
            bars.push(bar(Some(group), aggregate));
        }
    }
    bars
}

/// At most `max` characters, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut short: String = text.chars().take(max.saturating_sub(1)).collect();
    short.push('…');
    short
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the reports (one or several runs) as one SVG document.
pub fn render(reports: &[&Report]) -> String {
    let with_names = reports.len() > 1;
    let bars: Vec<Bar> = reports
        .iter()
        .flat_map(|r| bars_of(r, with_names))
        .collect();
    let latencies: Vec<(String, Vec<f64>)> = reports
        .iter()
        .map(|report| {
            let mut samples: Vec<f64> = report
                .results
                .iter()
                .filter(|r| r.error.is_none())
                .map(|r| r.latency_ms.max(1e-3))
                .collect();
            samples.sort_by(f64::total_cmp);
            (report.name.clone(), samples)
        })
        .collect();
    let with_histogram = reports.len() == 1;

    let bar_top = 90.0;
    let bar_height = 260.0;
    let label_room = 140.0;
    let cdf_top = bar_top + bar_height + label_room + 50.0;
    let cdf_height = 240.0;
    let hist_top = cdf_top + cdf_height + 80.0;
    let hist_height = 200.0;
    let below_latency = if with_histogram {
        hist_top + hist_height + 60.0
    } else {
        cdf_top + cdf_height + 60.0 + 18.0 * reports.len() as f64
    };
    let reliability_height = 240.0;
    let calibrated: Vec<(&str, &Calibration)> = reports
        .iter()
        .filter_map(|r| Some((r.name.as_str(), r.aggregate.calibration.as_ref()?)))
        .collect();
    let reliability_top = below_latency + 30.0;
    let height = if calibrated.is_empty() {
        below_latency
    } else {
        reliability_top + reliability_height + 60.0 + 18.0 * calibrated.len() as f64
    };

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    let title = match reports {
        [single] => format!("kgmesh eval: {}", single.name),
        _ => format!("kgmesh eval: {} runs", reports.len()),
    };
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        MARGIN_LEFT,
        escape(&title)
    );
    if let [single] = reports {
        let _ = writeln!(
            svg,
            r##"<text x="{}" y="42" fill="#555">LLM: {} · embedder: {} · {} questions</text>"##,
            MARGIN_LEFT,
            escape(&single.system.llm),
            escape(&single.system.embedder),
            single.aggregate.questions
        );
    }

    draw_bars(&mut svg, &bars, bar_top, bar_height);
    draw_cdf(&mut svg, &latencies, cdf_top, cdf_height);
    if with_histogram {
        if let Some((_, samples)) = latencies.first() {
            draw_histogram(&mut svg, samples, hist_top, hist_height);
        }
    }
    if !calibrated.is_empty() {
        draw_reliability(&mut svg, &calibrated, reliability_top, reliability_height);
    }
    svg.push_str("</svg>\n");
    svg
}

fn draw_bars(svg: &mut String, bars: &[Bar], top: f64, height: f64) {
    let plot_width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let bottom = top + height;
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" font-weight="bold">Hits@1 and context hit (a gold answer in the evidence), %</text>"#,
        MARGIN_LEFT,
        top - 8.0
    );
    for tick in (0..=100).step_by(20) {
        let y = bottom - height * f64::from(tick) / 100.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{MARGIN_LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{tick}</text>"##,
            WIDTH - MARGIN_RIGHT,
            MARGIN_LEFT - 6.0,
            y + 4.0
        );
    }
    if bars.is_empty() {
        return;
    }
    let slot = plot_width / bars.len() as f64;
    let bar_width = (slot * 0.35).min(40.0);
    for (index, bar) in bars.iter().enumerate() {
        let center = MARGIN_LEFT + slot * (index as f64 + 0.5);
        for (offset, value, color, class) in [
            (-bar_width, bar.hits_at_1, "#1f77b4", "hits1"),
            (0.0, bar.context_hit, "#aec7e8", "context"),
        ] {
            let h = height * value.clamp(0.0, 1.0);
            let _ = writeln!(
                svg,
                r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{bar_width:.1}" height="{h:.1}" fill="{color}"><title>{}: {:.1}%</title></rect>"#,
                center + offset,
                bottom - h,
                escape(&bar.label),
                100.0 * value
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">{:.1}</text>"#,
            center - bar_width / 2.0,
            bottom - height * bar.hits_at_1.clamp(0.0, 1.0) - 4.0,
            100.0 * bar.hits_at_1
        );
        let _ = writeln!(
            svg,
            r#"<text x="{center:.1}" y="{:.1}" text-anchor="end" transform="rotate(-35 {center:.1} {:.1})">{} (n={})</text>"#,
            bottom + 14.0,
            bottom + 14.0,
            escape(&shorten(&bar.label, 36)),
            bar.questions
        );
    }
    let legend_x = WIDTH - MARGIN_RIGHT - 220.0;
    let _ = writeln!(
        svg,
        r##"<rect x="{legend_x}" y="{}" width="12" height="12" fill="#1f77b4"/><text x="{}" y="{}">Hits@1</text><rect x="{}" y="{}" width="12" height="12" fill="#aec7e8"/><text x="{}" y="{}">context hit</text>"##,
        top - 20.0,
        legend_x + 16.0,
        top - 10.0,
        legend_x + 80.0,
        top - 20.0,
        legend_x + 96.0,
        top - 10.0
    );
}

/// Decades covering the samples, in milliseconds.
fn log_range(latencies: &[(String, Vec<f64>)]) -> (f64, f64) {
    let all = latencies.iter().flat_map(|(_, s)| s.iter().copied());
    let (min, max) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !min.is_finite() || max <= 0.0 {
        return (0.0, 3.0);
    }
    let low = min.log10().floor();
    let high = max.log10().ceil().max(low + 1.0);
    (low, high)
}

fn draw_cdf(svg: &mut String, latencies: &[(String, Vec<f64>)], top: f64, height: f64) {
    let plot_width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let bottom = top + height;
    let (low, high) = log_range(latencies);
    let x_of = |ms: f64| MARGIN_LEFT + plot_width * (ms.log10() - low) / (high - low);
    let _ = writeln!(
        svg,
        r#"<text x="{MARGIN_LEFT}" y="{}" font-weight="bold">Latency CDF (share of questions answered within x ms, log scale)</text>"#,
        top - 8.0
    );
    for tick in (0..=100).step_by(25) {
        let y = bottom - height * f64::from(tick) / 100.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{MARGIN_LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{tick}%</text>"##,
            WIDTH - MARGIN_RIGHT,
            MARGIN_LEFT - 6.0,
            y + 4.0
        );
    }
    draw_decade_ticks(svg, low, high, bottom, &x_of);
    for (index, (name, samples)) in latencies.iter().enumerate() {
        let color = PALETTE[index % PALETTE.len()];
        if !samples.is_empty() {
            let n = samples.len() as f64;
            let mut points = format!("{:.1},{:.1}", x_of(samples[0]), bottom);
            for (rank, value) in samples.iter().enumerate() {
                let x = x_of(*value);
                let _ = write!(
                    points,
                    " {x:.1},{:.1} {x:.1},{:.1}",
                    bottom - height * rank as f64 / n,
                    bottom - height * (rank as f64 + 1.0) / n
                );
            }
            let _ = writeln!(
                svg,
                r#"<polyline class="cdf" fill="none" stroke="{color}" stroke-width="1.5" points="{points}"/>"#
            );
        }
        let p50 = super::metrics::percentile(samples, 50.0);
        let p99 = super::metrics::percentile(samples, 99.0);
        let legend_y = bottom + 44.0 + 18.0 * index as f64;
        let _ = writeln!(
            svg,
            r#"<rect x="{MARGIN_LEFT}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{legend_y:.1}">{} (p50 {p50:.1} ms, p99 {p99:.1} ms, n={})</text>"#,
            legend_y - 10.0,
            MARGIN_LEFT + 16.0,
            escape(name),
            samples.len()
        );
    }
}

fn draw_decade_ticks(
    svg: &mut String,
    low: f64,
    high: f64,
    bottom: f64,
    x_of: &dyn Fn(f64) -> f64,
) {
    let mut exponent = low;
    while exponent <= high + 1e-9 {
        let ms = 10f64.powf(exponent);
        let x = x_of(ms);
        let label = if ms >= 1.0 {
            format!("{ms:.0}")
        } else {
            format!("{ms}")
        };
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{bottom:.1}" x2="{x:.1}" y2="{:.1}" stroke="#999"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label} ms</text>"##,
            bottom + 5.0,
            bottom + 18.0
        );
        exponent += 1.0;
    }
}

fn draw_histogram(svg: &mut String, samples: &[f64], top: f64, height: f64) {
    let plot_width = WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let bottom = top + height;
    let _ = writeln!(
        svg,
        r#"<text x="{MARGIN_LEFT}" y="{}" font-weight="bold">Latency histogram (questions per bin, log-spaced bins)</text>"#,
        top - 8.0
    );
    if samples.is_empty() {
        return;
    }
    let (low, high) = log_range(&[(String::new(), samples.to_vec())]);
    let bins_per_decade = 10.0;
    let bin_count = ((high - low) * bins_per_decade).round().max(1.0) as usize;
    let mut counts = vec![0usize; bin_count];
    for value in samples {
        let position = (value.log10() - low) * bins_per_decade;
        let bin = (position.floor().max(0.0) as usize).min(bin_count - 1);
        counts[bin] += 1;
    }
    let tallest = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let bin_width = plot_width / bin_count as f64;
    for (bin, count) in counts.iter().enumerate() {
        if *count == 0 {
            continue;
        }
        let h = height * *count as f64 / tallest;
        let _ = writeln!(
            svg,
            r##"<rect class="histogram" x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#1f77b4"><title>{count} questions</title></rect>"##,
            MARGIN_LEFT + bin_width * bin as f64,
            bottom - h,
            (bin_width - 1.0).max(0.5)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{tallest:.0}</text><text x="{:.1}" y="{bottom:.1}" text-anchor="end">0</text>"#,
        MARGIN_LEFT - 6.0,
        top + 4.0,
        MARGIN_LEFT - 6.0
    );
    let x_of = |ms: f64| MARGIN_LEFT + plot_width * (ms.log10() - low) / (high - low);
    draw_decade_ticks(svg, low, high, bottom, &x_of);
}

/// The reliability diagram: each run's share of right answers per confidence bin (a
/// dot sized by the bin's answers) against the diagonal a calibrated confidence
/// follows; the legend gives each run's ECE and AUROC.
fn draw_reliability(svg: &mut String, runs: &[(&str, &Calibration)], top: f64, height: f64) {
    let side = height;
    let left = MARGIN_LEFT;
    let bottom = top + side;
    let _ = writeln!(
        svg,
        r#"<text x="{left}" y="{}" font-weight="bold">Reliability (share right against confidence; calibrated on the diagonal)</text>"#,
        top - 8.0
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{left}" y="{top}" width="{side}" height="{side}" fill="none" stroke="#999"/><line x1="{left}" y1="{bottom}" x2="{}" y2="{top}" stroke="#bbb" stroke-dasharray="4 3"/>"##,
        left + side
    );
    for tick in 0..=5 {
        let value = tick as f64 / 5.0;
        let _ = writeln!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555">{value:.1}</text><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">{value:.1}</text>"##,
            left + side * value,
            bottom + 16.0,
            left - 6.0,
            bottom - side * value + 4.0
        );
    }
    let most = runs
        .iter()
        .flat_map(|(_, c)| c.bins.iter().map(|b| b.count))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    for (i, (name, calibration)) in runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<String> = calibration
            .bins
            .iter()
            .map(|b| {
                format!(
                    "{:.1},{:.1}",
                    left + side * b.mean_confidence,
                    bottom - side * b.accuracy
                )
            })
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
            points.join(" ")
        );
        for b in &calibration.bins {
            let _ = writeln!(
                svg,
                r#"<circle class="reliability" cx="{:.1}" cy="{:.1}" r="{:.1}" fill="{color}"><title>{name}: confidence {:.2}, {:.0}% right of {} answers</title></circle>"#,
                left + side * b.mean_confidence,
                bottom - side * b.accuracy,
                2.0 + 5.0 * (b.count as f64 / most).sqrt(),
                b.mean_confidence,
                100.0 * b.accuracy,
                b.count
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}">{}: ECE {:.3}, AUROC {}, {} answers</text>"#,
            left + side + 30.0,
            top + 14.0 + 18.0 * i as f64,
            escape(name),
            calibration.ece,
            calibration
                .auroc
                .map_or("-".to_owned(), |a| format!("{a:.3}")),
            calibration.answers
        );
    }
}
