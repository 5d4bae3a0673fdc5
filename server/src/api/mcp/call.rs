//! A tool call: the assistant run as a stateless run, waited on.

use super::caller::caller;
use super::tools;
use crate::api::respond::result_of;
use crate::app::App;
use crate::error::ApiError;
use crate::runs::{self, Cancel, request::RunCreate};
use crate::served::Outcome;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ErrorData};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use std::sync::Arc;

/// Runs the assistant a tool stands for with the call's arguments as input. An unknown tool is
/// a protocol error (invalid params); arguments the graph does not take and a run that fails
/// are tool results with `isError`, whose text says why.
pub(super) async fn run(
    app: &Arc<App>,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    let name = request.name.as_ref();
    let user = caller(context);
    let listed = tools::list(app, user.as_ref()).await.map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    let Some(found) = listed.iter().find(|l| l.tool.name == name) else {
        let known: Vec<&str> = listed.iter().map(|l| l.tool.name.as_ref()).collect();
        let shown: String = name.chars().take(200).collect();
        let message = format!("there is no tool named {shown:?}; the tools are: {}", known.join(", "));
        return Err(ErrorData::invalid_params(message, None));
    };
    let mut input = Value::Object(request.arguments.unwrap_or_default());
    for field in found.message_fields {
        // A plain string is one message of the user's; the state's field is a list.
        if let Some(text @ Value::String(_)) = input.get_mut(*field) {
            *text = json!([text.take()]);
        }
    }
    let body = json!({"assistant_id": found.assistant_id, "input": input});
    let mut body: RunCreate =
        serde_json::from_value(body).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    body.user = user;
    let accepted = match runs::create(app, None, body, runs::Attached::Client).await {
        Ok(accepted) => accepted,
        Err(ApiError::Invalid(reason) | ApiError::BadRequest(reason)) => {
            return Ok(failure(format!("the arguments do not fit tool `{name}`: {reason}")));
        }
        Err(ApiError::NotFound(reason) | ApiError::Forbidden(reason)) => {
            return Err(ErrorData::invalid_params(reason, None));
        }
        Err(other) => return Err(ErrorData::internal_error(other.to_string(), None)),
    };
    let outcome = tokio::select! {
        outcome = accepted.live.done() => outcome,
        () = context.ct.cancelled() => {
            // The client gave up on the call: the run stops too.
            app.cancel_run(&accepted.live.run_id, Cancel::Interrupt).await.ok();
            return Err(ErrorData::internal_error("the call was cancelled", None));
        }
    };
    Ok(match outcome {
        Outcome::Failed { error, message } => failure(format!("the run of tool `{name}` failed: {error}: {message}")),
        finished => {
            let values = result_of(&finished);
            let mut result = CallToolResult::success(vec![ContentBlock::text(values.to_string())]);
            if values.is_object() {
                result.structured_content = Some(values);
            }
            result
        }
    })
}

/// A call that did not give a result, as a tool result with `isError` whose text says why.
fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
