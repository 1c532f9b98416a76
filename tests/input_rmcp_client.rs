//! Input completion driven by rmcp's own client over real stdio, in both generations: a
//! `ClientHandler` answers the form (legacy: `elicitation/create`; modern: rmcp's `call_tool`
//! fulfils `input_required` through the same handler and retries with the state).

#[path = "support/fake_snowluma.rs"]
mod fake_snowluma;
#[path = "support/raw_client.rs"]
mod raw_client;
#[path = "support/rmcp_client.rs"]
mod rmcp_client;

use std::sync::Mutex;

use fake_snowluma::FakeSnowLuma;
use rmcp::model::{ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::service::{RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};
use tokio::process::Command;

const TOKEN: &str = "rmcp-input-token";

/// A client with form elicitation that answers prompts from a script, recording each message.
struct Answering {
    forms: bool,
    answers: Mutex<Vec<ElicitResult>>,
    prompts: Mutex<Vec<String>>,
}

impl ClientHandler for Answering {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = request {
            self.prompts.lock().unwrap().push(message);
        }
        let mut answers = self.answers.lock().unwrap();
        Ok(if answers.is_empty() {
            ElicitResult::new(ElicitationAction::Cancel)
        } else {
            answers.remove(0)
        })
    }

    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.forms {
            json!({ "elicitation": { "form": {} } })
        } else {
            json!({})
        };
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": { "name": "rmcp-input-test", "version": "1.0" }
        }))
        .expect("client config")
    }
}

fn accept(params_json: &str) -> ElicitResult {
    let mut result = ElicitResult::new(ElicitationAction::Accept);
    result.content = Some(json!({ "params_json": params_json }));
    result
}

async fn connect(
    modern: bool,
    fake: &FakeSnowLuma,
    forms: bool,
    answers: Vec<ElicitResult>,
) -> RunningService<RoleClient, Answering> {
    let mut command = Command::new(raw_client::binary());
    command
        .env("SNOWLUMA_MCP_MODE", "write")
        .env("SNOWLUMA_MCP_ENDPOINT", &fake.url)
        .env("SNOWLUMA_MCP_TOKEN", TOKEN)
        .env("SNOWLUMA_MCP_LOG", "warn");
    let handler = Answering {
        forms,
        answers: Mutex::new(answers),
        prompts: Mutex::new(Vec::new()),
    };
    rmcp_client::connect(handler, command, modern).await
}

/// Calls a tool (rmcp drives any `input_required` rounds) and checks the result against the
/// advertised outputSchema; returns (isError, structuredContent).
async fn call(
    client: &RunningService<RoleClient, Answering>,
    name: &str,
    args: Value,
) -> (bool, Value) {
    let (result, structured) = rmcp_client::call_listed(client, name, args).await;
    (result.is_error == Some(true), structured)
}

fn send_group() -> Value {
    json!({ "action": "send_group_msg", "params": { "group_id": 20001 } })
}

#[tokio::test]
async fn rmcp_clients_complete_missing_params_in_both_generations() {
    for modern in [false, true] {
        let era = if modern { "modern" } else { "legacy" };
        let fake = FakeSnowLuma::start(Some(TOKEN)).await;
        let answers = vec![
            accept(r#"{"message":"Hello"}"#),
            ElicitResult::new(ElicitationAction::Decline),
            ElicitResult::new(ElicitationAction::Cancel),
            accept("{oops"),
            accept(r#"{"message":"x","group_id":1}"#),
            accept(r#"{"message":"x","other":1}"#),
        ];
        let client = connect(modern, &fake, true, answers).await;

        let (error, body) = call(&client, "invoke_action_with_input", send_group()).await;
        assert!(!error, "{era}: {body}");
        assert_eq!(body["diagnostics"]["outcome"], "success", "{era}");
        let sent = fake.requests_for("send_group_msg");
        assert_eq!(sent.len(), 1, "{era}");
        assert_eq!(
            sent[0].json().unwrap()["params"],
            json!({ "group_id": 20001, "message": "Hello" })
        );

        for (kind, field) in [
            ("input_declined", None),
            ("input_cancelled", None),
            ("input_invalid", None),
            ("input_invalid", Some("group_id")),
            ("input_invalid", Some("other")),
        ] {
            let (error, body) = call(&client, "invoke_action_with_input", send_group()).await;
            assert!(error, "{era}: {body}");
            assert_eq!(body["diagnostics"]["kind"], kind, "{era}: {body}");
            if let Some(field) = field {
                assert_eq!(body["diagnostics"]["field"], field, "{era}: {body}");
            }
        }
        assert_eq!(fake.requests_for("send_group_msg").len(), 1, "{era}");
        let prompts = client.service().prompts.lock().unwrap().clone();
        assert_eq!(prompts.len(), 6, "{era}");
        assert!(prompts.iter().all(|p| p.contains("message")), "{era}");

        // Complete arguments: no prompt at all.
        let complete = json!({ "action": "get_group_info", "params": { "group_id": 20001 } });
        let (error, _) = call(&client, "query_action_with_input", complete).await;
        assert!(!error, "{era}");
        assert_eq!(client.service().prompts.lock().unwrap().len(), 6, "{era}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn rmcp_clients_without_forms_are_sent_to_the_original_tool() {
    for modern in [false, true] {
        let fake = FakeSnowLuma::start(Some(TOKEN)).await;
        let client = connect(modern, &fake, false, Vec::new()).await;
        let (error, body) = call(&client, "invoke_action_with_input", send_group()).await;
        assert!(error);
        assert_eq!(body["diagnostics"]["kind"], "input_unsupported");
        assert!(
            body["diagnostics"]["next_step"]
                .as_str()
                .unwrap()
                .contains("invoke_action")
        );
        assert!(client.service().prompts.lock().unwrap().is_empty());
        assert!(fake.requests().is_empty());
        client.cancel().await.unwrap();
    }
}
