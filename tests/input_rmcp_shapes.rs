//! The input module is rmcp-free; these tests pin that its form and its answer parsing fit
//! rmcp's own elicitation types, which is what the server wires them into.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::json;
use snowluma_mcp::catalog;
use snowluma_mcp::input::{self, Answer, PARAMS_JSON};

#[test]
fn the_form_is_a_valid_rmcp_form_elicitation() {
    let meta = catalog::resolve("send_group_msg").expect("in catalog").meta;
    let form = input::form(meta, &["group_id".to_string(), "message".to_string()]);
    let schema: ElicitationSchema =
        serde_json::from_value(form.requested_schema.clone()).expect("rmcp accepts the schema");
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message.clone(),
        requested_schema: schema,
    };
    let wire = serde_json::to_value(&params).expect("serializes");
    assert_eq!(wire["mode"], "form");
    assert_eq!(wire["message"], json!(form.message));
    assert_eq!(wire["requestedSchema"]["required"], json!([PARAMS_JSON]));
    let property = &wire["requestedSchema"]["properties"][PARAMS_JSON];
    assert_eq!(property["type"], "string");
    assert_eq!(property["minLength"], 2);
}

#[test]
fn rmcp_elicit_results_read_as_answers() {
    let mut accepted = ElicitResult::new(ElicitationAction::Accept);
    accepted.content = Some(json!({ PARAMS_JSON: "{\"message\":\"Hello\"}" }));
    let cases = [
        (accepted, Answer::Accept("{\"message\":\"Hello\"}".into())),
        (
            ElicitResult::new(ElicitationAction::Decline),
            Answer::Decline,
        ),
        (ElicitResult::new(ElicitationAction::Cancel), Answer::Cancel),
    ];
    for (result, expected) in cases {
        let wire = serde_json::to_value(&result).expect("serializes");
        assert_eq!(Answer::from_elicit_result(&wire), Ok(expected));
    }
}
