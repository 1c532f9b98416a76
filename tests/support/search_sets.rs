//! The keyword-search query sets in tests/search_sets/ and how they are scored; shared by
//! tests/search_quality.rs and benches/catalog.rs.
//!
//! A query's answer is what a client sees first: the results, or, when no action matches
//! every term, the partial suggestions. Top-1 counts queries whose first entry is an
//! expected action, top-3 those with one in the first three, and MRR averages 1/rank of the
//! first expected action (0 when absent).
#![allow(dead_code)] // each includer uses a different part

use snowluma_mcp::catalog::{ACTIONS, search};

pub const DEVELOPMENT: &str = include_str!("../search_sets/dev.txt");
pub const HELD_OUT: &str = include_str!("../search_sets/heldout.txt");
/// Held-out queries that also occur in an earlier query set (one a line).
pub const HELD_OUT_SEEN: &str = include_str!("../search_sets/heldout_seen.txt");

pub struct Case {
    pub kind: String,
    pub query: String,
    pub expected: Vec<String>,
}

/// The cases of a set file (`kind | query | expected…`, `#` comments).
pub fn parse(set: &str) -> Vec<Case> {
    set.lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split(" | ").map(str::trim).collect();
            assert_eq!(fields.len(), 3, "malformed line {line:?}");
            Case {
                kind: fields[0].to_string(),
                query: fields[1].to_string(),
                expected: fields[2].split_whitespace().map(str::to_string).collect(),
            }
        })
        .collect()
}

/// The held-out cases that occur in no earlier query set.
pub fn unseen(cases: Vec<Case>) -> Vec<Case> {
    let seen: Vec<&str> = HELD_OUT_SEEN
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect();
    cases
        .into_iter()
        .filter(|case| !seen.contains(&case.query.as_str()))
        .collect()
}

/// The quality lines the benches print beside their timings: the development set, the
/// held-out set, and the held-out queries no earlier set holds.
pub fn report() -> Vec<String> {
    let held_out = parse(HELD_OUT);
    vec![
        score(&parse(DEVELOPMENT)).line("development set"),
        score(&held_out).line("held-out set"),
        score(&unseen(held_out)).line("held-out set, unseen queries"),
    ]
}

pub struct Score {
    pub queries: usize,
    pub top1: f64,
    pub top3: f64,
    pub mrr: f64,
    /// Queries whose first answer is not expected: query, expected, first three answers.
    pub misses: Vec<String>,
}

/// The action names a client sees for a query, best first.
pub fn answers(query: &str) -> Vec<&'static str> {
    let found = search::keywords(query);
    let shown = if found.results.is_empty() {
        &found.suggestions
    } else {
        &found.results
    };
    shown.iter().map(|s| ACTIONS[s.action].name).collect()
}

pub fn score(cases: &[Case]) -> Score {
    let (mut top1, mut top3, mut reciprocal) = (0usize, 0usize, 0.0f64);
    let mut misses = Vec::new();
    for case in cases {
        for name in &case.expected {
            assert!(
                ACTIONS.iter().any(|a| a.name == name),
                "unknown expected action {name}"
            );
        }
        let answers = answers(&case.query);
        let rank = answers
            .iter()
            .position(|a| case.expected.iter().any(|e| e == a));
        match rank {
            Some(0) => top1 += 1,
            _ => misses.push(format!(
                "[{}] {:?}: expected {}, got {:?}",
                case.kind,
                case.query,
                case.expected.join(" "),
                &answers[..answers.len().min(3)]
            )),
        }
        if let Some(rank) = rank {
            if rank < 3 {
                top3 += 1;
            }
            reciprocal += 1.0 / (rank + 1) as f64;
        }
    }
    let total = cases.len() as f64;
    Score {
        queries: cases.len(),
        top1: top1 as f64 / total,
        top3: top3 as f64 / total,
        mrr: reciprocal / total,
        misses,
    }
}

impl Score {
    pub fn line(&self, label: &str) -> String {
        format!(
            "keyword search, {label}: {} queries, top-1 {:.1}%, top-3 {:.1}%, MRR {:.3}",
            self.queries,
            100.0 * self.top1,
            100.0 * self.top3,
            self.mrr
        )
    }
}
