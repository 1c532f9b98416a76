//! The protocol side of asking for missing params: a legacy session's `elicitation/create`
//! on the same connection, and a 2026-07-28 request's `input_required` result. The tools
//! build the form (`tools/input_tools.rs`); this file only puts it on the wire.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest,
    InputRequiredResult,
};
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;

use crate::input::InputForm;
use crate::tools::{ElicitError, Elicitor};

impl Elicitor for Peer<RoleServer> {
    fn elicit(
        &self,
        form: InputForm,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<Value, ElicitError>> {
        let request = self.create_elicitation_with_timeout(elicitation(form), Some(timeout));
        Box::pin(async move {
            match request.await {
                Ok(result) => Ok(serde_json::to_value(&result).unwrap_or(Value::Null)),
                Err(ServiceError::Timeout { .. }) => Err(ElicitError::Timeout),
                Err(error) => Err(ElicitError::Failed(error.to_string())),
            }
        })
    }
}

fn elicitation(form: InputForm) -> ElicitRequestParams {
    // The form is built to rmcp's schema shape (tests/input_rmcp_shapes.rs pins it); an
    // empty object schema would still be a valid request if that ever drifted.
    let requested_schema: ElicitationSchema = serde_json::from_value(form.requested_schema)
        .unwrap_or_else(|_| ElicitationSchema::builder().build_unchecked());
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: form.message,
        requested_schema,
    }
}

/// `resultType: "input_required"` with our one form and the signed state. No cache hints:
/// the answer depends on this call.
pub fn input_required(key: &str, form: InputForm, state: String) -> CallToolResponse {
    let request = InputRequest::Elicitation(ElicitRequest::new(elicitation(form)));
    let requests = BTreeMap::from([(key.to_string(), request)]);
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
}
