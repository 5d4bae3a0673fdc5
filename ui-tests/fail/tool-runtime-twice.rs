use graphwright::prelude::*;

/// Look up the weather.
#[tool]
fn weather(city: String, rt: &ToolRuntime, again: &ToolRuntime) -> String {
    format!("{city} {} {}", rt.tool_call_id(), again.tool_call_id())
}

fn main() {
    let _ = tools![Weather];
}
