//! What a new user meets first at a terminal: each subcommand's own help, `snowluma-mcp help`,
//! a top-level help that names the subcommands, a client configuration and both transports;
//! bad environment values reported under the variable's name; an endpoint without a scheme;
//! toolsets that list no tool, said at start-up and by `check`.

#[path = "support/raw_client.rs"]
mod raw_client;

use std::process::{Command, Output, Stdio};

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(raw_client::binary());
    command.args(args).stdin(Stdio::null());
    for (key, _) in std::env::vars() {
        if key.starts_with("SNOWLUMA_MCP_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().copied());
    command.output().expect("run snowluma-mcp")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn check_has_its_own_help() {
    for flag in ["--help", "-h"] {
        let output = run(&["check", flag], &[]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let text = stdout(&output);
        assert!(text.starts_with("usage: snowluma-mcp check"), "{text}");
        assert!(!text.contains("FAIL  configuration"), "{text}");
        assert!(
            !text.contains("--max-file-bytes"),
            "the server's flags: {text}"
        );
    }
}

#[test]
fn help_works_as_a_subcommand() {
    let server = run(&["help"], &[]);
    assert_eq!(server.status.code(), Some(0), "{}", stderr(&server));
    assert_eq!(stdout(&server), stdout(&run(&["--help"], &[])));

    let check = run(&["help", "check"], &[]);
    assert_eq!(check.status.code(), Some(0));
    assert!(stdout(&check).starts_with("usage: snowluma-mcp check"));
    let catalog = run(&["help", "catalog"], &[]);
    assert_eq!(catalog.status.code(), Some(0));
    assert!(stdout(&catalog).starts_with("usage: snowluma-mcp catalog"));

    let unknown = run(&["help", "chekc"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("commands are catalog and check"));
}

#[test]
fn top_level_help_names_subcommands_a_client_configuration_and_both_transports() {
    for flag in ["--help", "-h"] {
        let output = run(&[flag], &[]);
        assert_eq!(output.status.code(), Some(0));
        let text = stdout(&output);
        for expected in [
            "catalog",
            "check",
            "\"mcpServers\"",
            "\"command\": \"snowluma-mcp\"",
            "stdio",
            "Streamable HTTP",
        ] {
            assert!(text.contains(expected), "{flag} lacks {expected}: {text}");
        }
    }
}

#[test]
fn a_bad_environment_value_names_the_variable() {
    let output = run(&[], &[("SNOWLUMA_MCP_MODE", "bogus")]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("SNOWLUMA_MCP_MODE=`bogus`"), "{text}");
    assert!(text.contains("use docs, read or write"), "{text}");
    assert!(!text.contains("--mode"), "{text}");

    let check = run(&["check"], &[("SNOWLUMA_MCP_TIMEOUT_MS", "soon")]);
    assert_eq!(check.status.code(), Some(1));
    let text = stdout(&check);
    assert!(
        text.contains("FAIL  configuration: SNOWLUMA_MCP_TIMEOUT_MS=`soon`"),
        "{text}"
    );
    assert!(!text.contains("--timeout-ms"), "{text}");
}

#[test]
fn a_bad_flag_value_keeps_the_flags_name() {
    let output = run(&["--mode", "bogus"], &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("--mode"), "{text}");
    assert!(!text.contains("SNOWLUMA_MCP_MODE=`bogus`"), "{text}");
}

#[test]
fn an_endpoint_without_a_scheme_says_to_add_http() {
    let output = run(&[], &[("SNOWLUMA_MCP_ENDPOINT", "localhost:3000")]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("add http://"), "{text}");
    assert!(text.contains("http://localhost:3000/"), "{text}");
    assert!(!text.contains("not `localhost`"), "{text}");
}

#[test]
fn toolsets_that_list_no_tool_are_reported_at_start_up_and_by_check() {
    // Docs mode runs no action, so no typed tool is listed.
    let docs = [("SNOWLUMA_MCP_TOOLSETS", "message")];
    let started = run(&[], &docs);
    assert_eq!(started.status.code(), Some(0), "{}", stderr(&started));
    let text = stderr(&started);
    assert!(
        text.contains("warning: SNOWLUMA_MCP_TOOLSETS=message lists no typed tool in docs mode"),
        "{text}"
    );
    let check = run(&["check"], &docs);
    assert!(
        stdout(&check)
            .contains("note  toolsets: SNOWLUMA_MCP_TOOLSETS=message lists no typed tool"),
        "{}",
        stdout(&check)
    );

    // Read mode lists read-only actions only; group_admin has none.
    let read = [
        ("SNOWLUMA_MCP_TOOLSETS", "group_admin,group_info"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
    ];
    let started = run(&[], &read);
    let text = stderr(&started);
    assert!(
        text.contains("SNOWLUMA_MCP_TOOLSETS entry `group_admin`"),
        "{text}"
    );
    assert!(!text.contains("entry `group_info`"), "{text}");
    let check = run(&["check"], &read);
    assert!(
        stdout(&check).contains("toolsets: SNOWLUMA_MCP_TOOLSETS entry `group_admin`"),
        "{}",
        stdout(&check)
    );

    // Write mode lists them: nothing to say.
    let write = [
        ("SNOWLUMA_MCP_TOOLSETS", "group_admin"),
        ("SNOWLUMA_MCP_ENDPOINT", "http://127.0.0.1:9/"),
        ("SNOWLUMA_MCP_MODE", "write"),
    ];
    let dir = std::env::temp_dir().join(format!("snowluma-help-dl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(
        &dir,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
    )
    .unwrap();
    let dir_text = dir.to_string_lossy().into_owned();
    let mut env = write.to_vec();
    env.push(("SNOWLUMA_MCP_DOWNLOAD_DIR", dir_text.as_str()));
    let started = run(&[], &env);
    assert!(
        !stderr(&started).contains("lists no typed tool"),
        "{}",
        stderr(&started)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
