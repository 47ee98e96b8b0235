//! Inline SVG drawings for the HTML report: the throughput line chart and the
//! dependency cycle of a graph finding. Pure functions returning markup; every
//! text is escaped.

use super::escape::esc;
use std::fmt::Write;

/// Cumulative cases (blue) and findings (red) over elapsed time, each scaled to
/// its own maximum.
pub fn throughput(timeline: &[(f64, u64, u64)]) -> String {
    let (w, h, pad) = (640.0, 220.0, 40.0);
    let mut pts = vec![(0.0, 0u64, 0u64)];
    pts.extend(timeline.iter().copied());
    let tmax = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-3);
    let cmax = pts.iter().map(|p| p.1).max().unwrap_or(0).max(1) as f64;
    let fmax = pts.iter().map(|p| p.2).max().unwrap_or(0).max(1) as f64;
    let x = |t: f64| pad + t / tmax * (w - 2.0 * pad);
    let y = |v: f64, max: f64| h - pad - v / max * (h - 2.0 * pad);
    let line = |sel: &dyn Fn(&(f64, u64, u64)) -> f64, max: f64| {
        pts.iter()
            .map(|p| format!("{:.1},{:.1}", x(p.0), y(sel(p), max)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut s = format!(
        r#"<svg class="throughput" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="throughput over time">"#
    );
    let _ = write!(
        s,
        r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/><line x1="{pad}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/><line x1="{pad}" y1="{pad}" x2="{pad}" y2="{b}" stroke="#333"/>"##,
        b = h - pad,
        r = w - pad
    );
    let _ = write!(
        s,
        r##"<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="{}"/><polyline fill="none" stroke="#d1242f" stroke-width="2" stroke-dasharray="5 3" points="{}"/>"##,
        line(&|p| p.1 as f64, cmax),
        line(&|p| p.2 as f64, fmax)
    );
    let _ = write!(
        s,
        r##"<text x="{pad}" y="{ty}" font-size="12">0</text><text x="{r}" y="{ty}" font-size="12" text-anchor="end">{tmax:.1} s</text><text x="{lx}" y="18" font-size="12" fill="#1f6feb">cases (max {c})</text><text x="{fx}" y="18" font-size="12" fill="#d1242f">findings (max {f})</text></svg>"##,
        ty = h - pad + 16.0,
        r = w - pad,
        lx = pad,
        fx = pad + 200.0,
        c = cmax as u64,
        f = fmax as u64
    );
    s
}

/// The cycle of a graph finding's `evidence.edges` (`from`, `to`, `kind`,
/// `table`, `rid`): transactions on a circle, one labelled arrow per edge.
/// `None` when there are no edges.
pub fn cycle(edges: &serde_json::Value) -> Option<String> {
    let edges = cycle_edges(edges)?;
    if edges.is_empty() {
        return None;
    }
    let mut nodes: Vec<&str> = Vec::new();
    for (a, b, _) in &edges {
        for n in [a, b] {
            if !nodes.contains(&n.as_str()) {
                nodes.push(n);
            }
        }
    }
    let (w, h, r) = (420.0_f64, 320.0_f64, 110.0_f64);
    let (cx, cy) = (w / 2.0, h / 2.0);
    let pos = |i: usize| {
        let a =
            -std::f64::consts::FRAC_PI_2 + i as f64 * std::f64::consts::TAU / nodes.len() as f64;
        (cx + r * a.cos(), cy + r * a.sin())
    };
    let mut s = format!(
        r##"<svg class="cycle" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="dependency cycle"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs><rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/>"##
    );
    let node_r = 24.0;
    for (k, (a, b, label)) in edges.iter().enumerate() {
        let ia = nodes.iter().position(|n| n == a).unwrap_or(0);
        let ib = nodes.iter().position(|n| n == b).unwrap_or(0);
        edge(&mut s, k, (pos(ia), pos(ib)), ia == ib, node_r, label);
    }
    for (i, n) in nodes.iter().enumerate() {
        let (x, y) = pos(i);
        let _ = write!(
            s,
            r##"<circle cx="{x:.1}" cy="{y:.1}" r="{node_r}" fill="#ddf4ff" stroke="#0969da"/><text x="{x:.1}" y="{ty:.1}" font-size="14" text-anchor="middle" font-family="monospace">{}</text>"##,
            esc(n),
            ty = y + 5.0
        );
    }
    s.push_str("</svg>");
    Some(s)
}

/// A cycle's edges from the evidence: from, to and label (kind, and the row
/// where known).
fn cycle_edges(edges: &serde_json::Value) -> Option<Vec<(String, String, String)>> {
    Some(
        edges
            .as_array()?
            .iter()
            .map(|e| {
                let s = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
                let mut label = s("kind");
                if let (Some(t), Some(r)) = (e.get("table").and_then(|v| v.as_str()), e.get("rid"))
                {
                    if !r.is_null() {
                        let _ = write!(label, " {t}#{r}");
                    }
                }
                (s("from"), s("to"), label)
            })
            .collect(),
    )
}

/// Edge `k` of a cycle between node centres `from` and `to` (the same node:
/// `self_loop`) as a curve bent to one side, with its label.
fn edge(
    s: &mut String,
    k: usize,
    ((x1, y1), (x2, y2)): ((f64, f64), (f64, f64)),
    self_loop: bool,
    node_r: f64,
    label: &str,
) {
    // Bend each edge to one side, so a->b and b->a do not overlap.
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let bend = 40.0 + 8.0 * (k % 3) as f64;
    let (mx, my) = (
        (x1 + x2) / 2.0 - dy / len * bend,
        (y1 + y2) / 2.0 + dx / len * bend,
    );
    // Start and end on the node circles, towards the control point.
    let shorten = |x: f64, y: f64| {
        let (ux, uy) = (mx - x, my - y);
        let l = (ux * ux + uy * uy).sqrt().max(1.0);
        (x + ux / l * node_r, y + uy / l * node_r)
    };
    let ((sx, sy), (ex, ey)) = if self_loop {
        ((x1, y1 - node_r), (x1 + node_r, y1))
    } else {
        (shorten(x1, y1), shorten(x2, y2))
    };
    // The label sits at the curve's midpoint, on its outer side.
    let (tx, ty) = ((x1 + x2) / 4.0 + mx / 2.0, (y1 + y2) / 4.0 + my / 2.0);
    let side = mx - (x1 + x2) / 2.0;
    let (anchor, tx) = if side < -1.0 {
        ("end", tx - 5.0)
    } else if side > 1.0 {
        ("start", tx + 5.0)
    } else {
        ("middle", tx)
    };
    let _ = write!(
        s,
        r##"<path d="M {sx:.1} {sy:.1} Q {mx:.1} {my:.1} {ex:.1} {ey:.1}" fill="none" stroke="#444" stroke-width="1.5" marker-end="url(#arrow)"/><text x="{tx:.1}" y="{ty:.1}" font-size="12" text-anchor="{anchor}" fill="#8250df">{}</text>"##,
        esc(label),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycle_draws_every_node_and_escapes_labels() {
        let edges = serde_json::json!([
            {"from": "T1", "to": "T2", "kind": "rw", "table": "t", "rid": 1},
            {"from": "T2", "to": "<T1>", "kind": "ww", "table": null, "rid": null},
        ]);
        let s = cycle(&edges).unwrap();
        assert!(s.contains(">T1<") && s.contains(">T2<") && s.contains("&lt;T1&gt;"));
        assert!(s.contains("rw t#1"));
        assert_eq!(s.matches("marker-end").count(), 2);
        assert!(cycle(&serde_json::json!([])).is_none());
    }

    #[test]
    fn throughput_has_two_lines() {
        let s = throughput(&[(1.0, 10, 0), (2.0, 25, 1)]);
        assert_eq!(s.matches("<polyline").count(), 2);
    }
}
