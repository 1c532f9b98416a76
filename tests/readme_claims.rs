//! Claims README and docs/ make that a test can check: every setting `--help` shows has a row
//! in docs/configuration.md with its flag, the only variables without a flag are the two
//! tokens (and `--help` shows neither), and README's links to its own headings and to docs/
//! files resolve.

#[path = "support/raw_client.rs"]
mod raw_client;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// docs/configuration.md's rows: variable -> flag (`None` for `—`).
fn configuration_rows() -> BTreeMap<String, Option<String>> {
    read("docs/configuration.md")
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let variable = cells.get(1)?.strip_prefix("`SNOWLUMA_MCP_")?;
            let variable = format!("SNOWLUMA_MCP_{}", variable.trim_end_matches('`'));
            let flag = cells.get(2)?.trim_matches('`');
            Some((variable, flag.starts_with("--").then(|| flag.to_string())))
        })
        .collect()
}

/// `--help`'s settings: variable -> flag, from lines such as `--mode <MODE>` followed by
/// `[env: SNOWLUMA_MCP_MODE=]`.
fn help_settings() -> BTreeMap<String, String> {
    let output = Command::new(raw_client::binary())
        .arg("--help")
        .env_clear()
        .output()
        .expect("run snowluma-mcp --help");
    let help = String::from_utf8(output.stdout).unwrap();
    let mut settings = BTreeMap::new();
    let mut flag = None;
    for line in help.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("--") {
            flag = rest.split([' ', '=']).next().map(|f| format!("--{f}"));
        }
        if let Some(start) = line.find("[env: ") {
            let variable = line[start + 6..]
                .split(['=', ']'])
                .next()
                .unwrap()
                .to_string();
            settings.insert(variable, flag.clone().expect("a flag before its [env: …]"));
        }
    }
    settings
}

#[test]
fn every_setting_is_documented_with_its_flag_and_only_the_tokens_have_none() {
    let rows = configuration_rows();
    let help = help_settings();
    assert!(help.len() > 20, "{help:?}");
    for (variable, flag) in &help {
        assert_eq!(
            rows.get(variable),
            Some(&Some(flag.clone())),
            "docs/configuration.md: {variable} should have the row flag {flag}"
        );
    }
    let without_flag: Vec<&String> = rows
        .iter()
        .filter(|(_, flag)| flag.is_none())
        .map(|(variable, _)| variable)
        .collect();
    assert_eq!(
        without_flag,
        ["SNOWLUMA_MCP_HTTP_TOKEN", "SNOWLUMA_MCP_TOKEN"],
        "the variables README says have no flag"
    );
    for variable in without_flag {
        assert!(
            !help.contains_key(variable),
            "{variable} has a flag after all"
        );
    }
    assert_eq!(rows.len(), help.len() + 2, "rows for settings --help lacks");
}

#[test]
fn readme_links_resolve() {
    let readme = read("README.md");
    let slug = |heading: &str| {
        heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_')
            .collect::<String>()
            .replace(' ', "-")
    };
    let anchors: Vec<String> = readme
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| slug(l.trim_start_matches('#').trim()))
        .collect();
    for link in readme.split("](").skip(1) {
        let target = link.split(')').next().unwrap();
        if let Some(anchor) = target.strip_prefix('#') {
            assert!(
                anchors.iter().any(|a| a == anchor),
                "README links to #{anchor}"
            );
        } else if target.starts_with("docs/") {
            let file = target.split('#').next().unwrap();
            assert!(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(file).is_file(),
                "README links to {file}"
            );
        }
    }
}
